//! The PMA C API: argument checks, handles, batched delivery and status codes.

mod pma_encoder;

use std::ffi::{c_void, CStr};
use std::ptr;

use pma_encoder::{
    encode_8, encode_9, interleave, packet_with_len, packetize, random_fields, Fields, Rng,
};
use rocprof_trace_decoder::ffi::pma::{
    rocprof_nv_pma_decoder_create, rocprof_nv_pma_decoder_destroy, rocprof_nv_pma_decoder_feed,
    rocprof_nv_pma_decoder_get_stats, rocprof_nv_pma_decoder_reset, rocprof_nv_pma_sample_size,
    rocprof_nv_pma_stall_reason_string, PmaDecoderHandle, StatusCode,
};
use rocprof_trace_decoder::pma::{PmaSample, PmaStats};

const SUCCESS: StatusCode = 0;
const ERROR: StatusCode = 1;
const INVALID_ARGUMENT: StatusCode = 3;
const INVALID_SHADER_DATA: StatusCode = 4;
const NOT_IMPLEMENTED: StatusCode = 5;

#[derive(Default)]
struct Collected {
    samples: Vec<PmaSample>,
    batch_sizes: Vec<u64>,
    /// Status to return once this many samples were received.
    stop_after: Option<(usize, StatusCode)>,
    /// Handle to feed again from inside the callback, with the status that call returned.
    reenter: Option<(PmaDecoderHandle, StatusCode)>,
}

unsafe extern "C" fn collect(
    samples: *const PmaSample,
    sample_count: u64,
    userdata: *mut c_void,
) -> StatusCode {
    let collected = unsafe { &mut *userdata.cast::<Collected>() };
    let batch = unsafe { std::slice::from_raw_parts(samples, sample_count as usize) };
    collected.samples.extend_from_slice(batch);
    collected.batch_sizes.push(sample_count);
    if let Some((handle, _)) = collected.reenter {
        let status = unsafe { feed(handle, &[0u8; 32], collected) };
        collected.reenter = Some((handle, status));
    }
    match collected.stop_after {
        Some((count, status)) if collected.samples.len() >= count => status,
        _ => SUCCESS,
    }
}

unsafe fn feed(handle: PmaDecoderHandle, data: &[u8], collected: &mut Collected) -> StatusCode {
    unsafe {
        rocprof_nv_pma_decoder_feed(
            handle,
            data.as_ptr().cast(),
            data.len() as u64,
            Some(collect),
            ptr::from_mut(collected).cast(),
        )
    }
}

fn create(sm_version: u32) -> PmaDecoderHandle {
    let mut handle = PmaDecoderHandle { handle: 0 };
    assert_eq!(
        unsafe { rocprof_nv_pma_decoder_create(&mut handle, sm_version) },
        SUCCESS
    );
    assert_ne!(handle.handle, 0);
    handle
}

fn stream(count: usize, nine_byte: bool) -> (Vec<Fields>, Vec<u8>) {
    let mut rng = Rng(31);
    let fields: Vec<Fields> = (0..count)
        .map(|_| {
            if nine_byte {
                random_fields(&mut rng, 53, 6)
            } else {
                random_fields(&mut rng, 45, 5)
            }
        })
        .collect();
    let encode = if nine_byte { encode_9 } else { encode_8 };
    let bytes: Vec<u8> = fields.iter().flat_map(|f| encode(*f)).collect();
    (fields, interleave(&[packetize(17, &bytes, &[28, 5])]))
}

fn fields_of(sample: &PmaSample) -> Fields {
    Fields {
        pc_raw: sample.pc_offset >> 4,
        stall_key: sample.stall_key,
        wave_id: sample.wave_id,
        active: sample.active == 1,
    }
}

#[test]
fn samples_arrive_in_batches_in_stream_order() {
    for (sm_version, nine_byte) in [(0x800, false), (0xa04, true)] {
        let (fields, data) = stream(2500, nine_byte);
        let handle = create(sm_version);
        let mut collected = Collected::default();
        let (head, tail) = data.split_at(1001);
        assert_eq!(unsafe { feed(handle, head, &mut collected) }, SUCCESS);
        assert_eq!(unsafe { feed(handle, tail, &mut collected) }, SUCCESS);
        let decoded: Vec<Fields> = collected.samples.iter().map(fields_of).collect();
        assert_eq!(decoded, fields);
        assert!(collected
            .batch_sizes
            .iter()
            .all(|&size| (1..=1024).contains(&size)));
        assert!(collected.batch_sizes.contains(&1024));

        let mut stats = PmaStats::default();
        assert_eq!(
            unsafe { rocprof_nv_pma_decoder_get_stats(handle, &mut stats) },
            SUCCESS
        );
        assert_eq!(stats.samples, 2500);
        assert_eq!(stats.packets, data.len() as u64 / 32);
        assert_eq!(rocprof_nv_pma_decoder_destroy(handle), SUCCESS);
    }
}

#[test]
fn sample_sizes_follow_sm_version() {
    let mut size = 0u32;
    for (sm_version, expected) in [(0x800, 8), (0x890, 8), (0x900, 8), (0xa04, 9), (0xc00, 9)] {
        assert_eq!(
            unsafe { rocprof_nv_pma_sample_size(sm_version, &mut size) },
            SUCCESS
        );
        assert_eq!(size, expected, "sm_version {sm_version:#x}");
    }
    assert_eq!(
        unsafe { rocprof_nv_pma_sample_size(0x750, &mut size) },
        NOT_IMPLEMENTED
    );
    assert_eq!(
        unsafe { rocprof_nv_pma_sample_size(0x800, ptr::null_mut()) },
        INVALID_ARGUMENT
    );
}

#[test]
fn invalid_arguments_are_rejected() {
    let mut handle = PmaDecoderHandle { handle: 0 };
    assert_eq!(
        unsafe { rocprof_nv_pma_decoder_create(ptr::null_mut(), 0x800) },
        INVALID_ARGUMENT
    );
    assert_eq!(
        unsafe { rocprof_nv_pma_decoder_create(&mut handle, 80) },
        NOT_IMPLEMENTED
    );
    assert_eq!(handle.handle, 0);

    let unknown = PmaDecoderHandle { handle: u64::MAX };
    let mut collected = Collected::default();
    assert_eq!(
        unsafe { feed(unknown, &[0; 32], &mut collected) },
        INVALID_ARGUMENT
    );
    assert_eq!(rocprof_nv_pma_decoder_destroy(unknown), INVALID_ARGUMENT);
    assert_eq!(rocprof_nv_pma_decoder_reset(unknown), INVALID_ARGUMENT);
    let mut stats = PmaStats::default();
    assert_eq!(
        unsafe { rocprof_nv_pma_decoder_get_stats(unknown, &mut stats) },
        INVALID_ARGUMENT
    );

    let handle = create(0x800);
    let no_callback = unsafe {
        rocprof_nv_pma_decoder_feed(handle, [0u8; 32].as_ptr().cast(), 32, None, ptr::null_mut())
    };
    assert_eq!(no_callback, INVALID_ARGUMENT);
    let null_data = unsafe {
        rocprof_nv_pma_decoder_feed(handle, ptr::null(), 32, Some(collect), ptr::null_mut())
    };
    assert_eq!(null_data, INVALID_ARGUMENT);
    let empty = unsafe {
        rocprof_nv_pma_decoder_feed(handle, ptr::null(), 0, Some(collect), ptr::null_mut())
    };
    assert_eq!(empty, SUCCESS);
    let huge = unsafe {
        rocprof_nv_pma_decoder_feed(
            handle,
            [0u8].as_ptr().cast(),
            u64::MAX,
            Some(collect),
            ptr::null_mut(),
        )
    };
    assert_eq!(huge, INVALID_ARGUMENT);
    assert_eq!(
        unsafe { rocprof_nv_pma_decoder_get_stats(handle, ptr::null_mut()) },
        INVALID_ARGUMENT
    );

    assert_eq!(rocprof_nv_pma_decoder_destroy(handle), SUCCESS);
    assert_eq!(rocprof_nv_pma_decoder_destroy(handle), INVALID_ARGUMENT);
    assert_eq!(
        unsafe { feed(handle, &[0; 32], &mut collected) },
        INVALID_ARGUMENT
    );
}

#[test]
fn a_callback_status_stops_the_feed_and_is_returned() {
    let (fields, data) = stream(3000, false);
    let handle = create(0x800);
    let mut collected = Collected {
        stop_after: Some((1, 77)),
        ..Default::default()
    };
    assert_eq!(unsafe { feed(handle, &data, &mut collected) }, 77);
    assert_eq!(collected.batch_sizes, [1024]);
    let decoded: Vec<Fields> = collected.samples.iter().map(fields_of).collect();
    assert_eq!(decoded, fields[..1024]);
    assert_eq!(rocprof_nv_pma_decoder_destroy(handle), SUCCESS);
}

#[test]
fn malformed_packets_give_status_4_after_delivering_the_rest() {
    let (fields, good) = stream(10, true);
    let mut data = packet_with_len(17, &[], 30, false).to_vec();
    data.extend_from_slice(&good);
    let handle = create(0xa04);
    let mut collected = Collected::default();
    assert_eq!(
        unsafe { feed(handle, &data, &mut collected) },
        INVALID_SHADER_DATA
    );
    let decoded: Vec<Fields> = collected.samples.iter().map(fields_of).collect();
    assert_eq!(decoded, fields);
    let mut stats = PmaStats::default();
    assert_eq!(
        unsafe { rocprof_nv_pma_decoder_get_stats(handle, &mut stats) },
        SUCCESS
    );
    assert_eq!(stats.malformed_packets, 1);
    assert_eq!(rocprof_nv_pma_decoder_destroy(handle), SUCCESS);
}

#[test]
fn reentrant_feed_is_refused() {
    let (_, data) = stream(4, false);
    let handle = create(0x800);
    let mut collected = Collected {
        reenter: Some((handle, SUCCESS)),
        ..Default::default()
    };
    assert_eq!(unsafe { feed(handle, &data, &mut collected) }, SUCCESS);
    assert_eq!(collected.reenter, Some((handle, ERROR)));
    assert_eq!(collected.samples.len(), 4);
    assert_eq!(rocprof_nv_pma_decoder_destroy(handle), SUCCESS);
}

#[test]
fn reset_clears_partial_data_and_counters() {
    let (_, data) = stream(4, false);
    let handle = create(0x800);
    let mut collected = Collected::default();
    assert_eq!(
        unsafe { feed(handle, &data[..40], &mut collected) },
        SUCCESS
    );
    let mut stats = PmaStats::default();
    assert_eq!(
        unsafe { rocprof_nv_pma_decoder_get_stats(handle, &mut stats) },
        SUCCESS
    );
    assert_ne!(stats, PmaStats::default());
    assert_eq!(rocprof_nv_pma_decoder_reset(handle), SUCCESS);
    assert_eq!(
        unsafe { rocprof_nv_pma_decoder_get_stats(handle, &mut stats) },
        SUCCESS
    );
    assert_eq!(stats, PmaStats::default());
    assert_eq!(rocprof_nv_pma_decoder_destroy(handle), SUCCESS);
}

#[test]
fn stall_reason_names_are_static_strings() {
    let name = |reason| unsafe { CStr::from_ptr(rocprof_nv_pma_stall_reason_string(reason)) };
    assert_eq!(name(0).to_str(), Ok("INVALID"));
    assert_eq!(name(4).to_str(), Ok("MEMORY_DEPENDENCY"));
    assert_eq!(name(12).to_str(), Ok("SLEEPING"));
    assert_eq!(name(13).to_str(), Ok("UNKNOWN"));
    assert_eq!(name(u32::MAX).to_str(), Ok("UNKNOWN"));
}
