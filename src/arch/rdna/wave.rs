//! RDNA's timing of a traced wave (docs/timing/rdna.md §4), recorded into the shared
//! [`WaveBuilder`].

use crate::records::{Category, Inst, Pc, WaveStateKind};
use crate::wave::{PcSlot, WaveBuilder};

impl WaveBuilder {
    /// Fills the oldest of the open PC slots at the end of the list (a jump and a return from
    /// trap may both wait for their NEW_PC), or pins the next instruction if none is open.
    pub fn set_next_pc(&mut self, pc: Pc) {
        let open = self
            .slots
            .iter()
            .rev()
            .take_while(|slot| slot.pc.is_none())
            .count();
        match open {
            0 => self.slots.push(PcSlot {
                index: self.insts.len(),
                pc: Some(pc),
            }),
            _ => {
                let first_open = self.slots.len() - open;
                self.slots[first_open].pc = Some(pc);
            }
        }
    }

    /// RDNA: an instruction issued at token time `t` taking `cycles`; a stall since the last
    /// WAVE_READY is folded into it (SQTT_FORMAT §3.3). The wave's end time is the INST
    /// token's business ([`WaveBuilder::rdna_inst_token`]), not this record's.
    pub fn rdna_instruction(&mut self, category: Category, cycles: u32, t: i64) {
        let mut inst = Inst::new(category as u8, 0, cycles as i32, t, Pc::NONE);
        if self.state == WaveStateKind::Stall && self.last_state_cycle < t {
            let stall = t.wrapping_sub(self.last_state_cycle);
            inst.set_stall(stall as u32);
            inst.duration = inst.duration.wrapping_add(stall as i32);
            inst.time = self.last_state_cycle;
        }
        self.insts.push(inst);
        self.update_state(WaveStateKind::Exec, t);
    }

    /// RDNA: an INST token of this wave at `t` while it is not trapped, whatever its id (an
    /// ignored id or a barrier included): the wave has run until at least `t`.
    pub fn rdna_inst_token(&mut self, t: i64) {
        self.end_time = t;
    }

    /// RDNA: an immediate (s_nop, s_wait*, s_clause, barrier) reported at `t`; it started when
    /// the previous instruction ended, and waited until `t`.
    pub fn rdna_immediate(&mut self, t: i64) {
        let time = self.last_end().map_or(t, |end| end.min(t));
        let stall = t.wrapping_sub(time);
        self.insts.push(Inst::new(
            Category::Immed as u8,
            stall as u32,
            (stall as i32).wrapping_add(1),
            time,
            Pc::NONE,
        ));
        self.update_state(WaveStateKind::Wait, time);
        self.update_state(WaveStateKind::Exec, t.wrapping_add(1));
    }

    /// RDNA: trap entry (or context save); the CONTEXT record stands for the handler. A trap
    /// token while already trapped adds another record.
    pub fn rdna_trap(&mut self, t: i64) {
        self.insts
            .push(Inst::new(Category::Context as u8, 0, 1, t, Pc::NONE));
        self.trapped = true;
    }

    /// A trap record that is the wave's last record lasts at least until `t + 1` (context
    /// restore, return from trap); any other last record is left as it is.
    pub fn extend_trap(&mut self, t: i64) {
        if let Some(trap) = self
            .insts
            .last_mut()
            .filter(|i| i.category() == Category::Context as u8)
        {
            trap.duration = trap
                .duration
                .max(t.wrapping_add(1).wrapping_sub(trap.time) as i32);
        }
    }

    /// RDNA: return from trap at `t`; recording resumes at a PC the trace announces.
    pub fn rdna_return_from_trap(&mut self, t: i64) {
        self.trapped = false;
        self.extend_trap(t);
        self.open_pc_slot();
    }

    /// RDNA WAVE_END at `t`: s_endpgm produces no token, so a MESSAGE record covers the time
    /// from the last instruction's end, unless the wave ends trapped (in a trap handler or
    /// saved): then it did not end with an s_endpgm of its own code.
    pub fn rdna_complete(&mut self, t: i64) {
        self.update_state(WaveStateKind::Empty, t);
        self.end_time = t;
        self.complete = true;
        if self.trapped {
            return;
        }
        if let Some(end) = self.last_end().filter(|&end| end < t) {
            self.insts.push(Inst::new(
                Category::Message as u8,
                0,
                t.wrapping_sub(end) as i32,
                end,
                Pc::NONE,
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wave::WaveIdentity;

    fn wave() -> WaveBuilder {
        let mut w = WaveBuilder::default();
        w.restart(WaveIdentity::default(), 100, Pc::new(0x1000, 0));
        w
    }

    fn timeline(w: &WaveBuilder) -> Vec<(i32, i32)> {
        w.timeline.iter().map(|s| (s.kind, s.duration)).collect()
    }

    #[test]
    fn immediates_start_when_the_previous_instruction_ends() {
        let mut w = wave();
        w.rdna_immediate(110);
        w.rdna_instruction(Category::Smem, 1, 111);
        w.rdna_immediate(200);
        w.rdna_immediate(201);
        let got: Vec<_> = w
            .insts
            .iter()
            .map(|i| (i.category(), i.stall(), i.duration, i.time))
            .collect();
        assert_eq!(
            got,
            [
                (9, 0, 1, 110),
                (1, 0, 1, 111),
                (9, 88, 89, 112),
                (9, 0, 1, 201)
            ]
        );
        // IDLE until the first immediate, WAIT 1, EXEC 1, WAIT 88 + 1 merged.
        assert_eq!(timeline(&w), [(1, 10), (3, 1), (2, 1), (3, 90)]);
    }

    #[test]
    fn a_stall_is_folded_into_the_next_instruction() {
        let mut w = wave();
        w.update_state(WaveStateKind::Stall, 120);
        w.rdna_instruction(Category::Valu, 4, 130);
        let i = w.insts[0];
        assert_eq!((i.stall(), i.duration, i.time), (10, 14, 120));
        assert_eq!(timeline(&w), [(1, 20), (4, 10)]);
    }

    #[test]
    fn completion_adds_the_tokenless_endpgm() {
        let mut w = wave();
        w.rdna_instruction(Category::Message, 1, 150);
        w.rdna_complete(200);
        let last = w.insts[1];
        assert_eq!(
            (last.category(), last.duration, last.time),
            (Category::Message as u8, 49, 151)
        );
        assert_eq!(timeline(&w), [(1, 50), (2, 50)]);
        assert!(w.complete);
    }
}
