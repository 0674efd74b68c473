pub mod pma;
