//! How one file's rows join a trace set: times shifted onto the set's clock, devices
//! renumbered as the set's ranks, and process and thread ids tagged with the file, so that
//! two files whose processes share an id (two nodes, one pid) never join each other's rows.
//!
//! Each table's `merge` applies a [`Remap`] per file and concatenates: a map per file, an
//! associative reduce over them.

use std::collections::BTreeMap;

/// Bits of a serialized `globalTid`/`globalPid` below the file tag: the 24-bit pid and the
/// 24-bit tid. The hardware and VM bits above them are replaced by the tag.
const LOW_BITS: i64 = 0xFFFF_FFFF_FFFF;

/// The largest file tag: the tag sits in bits 48-62 of a global id, the sign bit stays 0.
pub const MAX_FILE_TAG: i64 = (1 << 15) - 1;

/// What a file's rows become in a set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remap {
    /// Added to every timestamp of the file: its time on the set's clock minus its own.
    pub shift_ns: i64,
    /// The rank of each device of the file (`deviceId` to rank). Every device with rows in
    /// the file has an entry.
    pub devices: BTreeMap<i64, i64>,
    /// The file's tag, 1 to [`MAX_FILE_TAG`]: replaces the hardware and VM bits of its
    /// global ids.
    pub file_tag: i64,
}

impl Remap {
    /// The identity for one file read alone: no shift, devices as they are, tag 0 (ids
    /// unchanged).
    pub fn identity() -> Remap {
        Remap { shift_ns: 0, devices: BTreeMap::new(), file_tag: 0 }
    }

    /// A timestamp on the set's clock.
    pub fn time(&self, ns: i64) -> i64 {
        ns + self.shift_ns
    }

    /// The rank of a device (the device itself when the map has no entry).
    pub fn device(&self, device: i64) -> i64 {
        self.devices.get(&device).copied().unwrap_or(device)
    }

    /// A serialized `globalTid` or `globalPid` with the file tag in place of its hardware and
    /// VM bits (unchanged with tag 0): [`super::nvtx::pid_of`] and
    /// [`super::nvtx::tid_of`] read the same pid and tid.
    pub fn global_id(&self, id: i64) -> i64 {
        if self.file_tag == 0 { id } else { (self.file_tag << 48) | (id & LOW_BITS) }
    }

    /// A process key ([`super::nvtx::process_of`] of a global id) with the same tag:
    /// `process_of(global_id(g)) == process(process_of(g))`.
    pub fn process(&self, process: i64) -> i64 {
        if self.file_tag == 0 { process } else { (self.file_tag << 24) | (process & 0xFF_FFFF) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::nvtx::{pid_of, process_of, tid_of};

    #[test]
    fn tags_keep_pid_and_tid_and_agree_between_global_ids_and_process_keys() {
        let r = Remap { shift_ns: 5, devices: BTreeMap::from([(1, 3)]), file_tag: 7 };
        let g: i64 = (1 << 56) | (2 << 48) | (854_723 << 24) | 4242;
        let t = r.global_id(g);
        assert_eq!(pid_of(t), 854_723);
        assert_eq!(tid_of(t), 4242);
        assert_eq!(process_of(t), r.process(process_of(g)));
        assert_eq!(process_of(t), (7 << 24) | 854_723);
        assert_eq!((r.time(10), r.device(1), r.device(2)), (15, 3, 2));
        let top = Remap { file_tag: MAX_FILE_TAG, ..r };
        assert!(top.global_id(i64::MAX) > 0);
        assert_eq!(Remap::identity().global_id(g), g);
    }
}
