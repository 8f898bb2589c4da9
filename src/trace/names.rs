//! Table and column names of the Nsight Systems SQLite export, in one place.
//!
//! Every name the tool reads from a trace is a constant here, so that a schema change is one
//! edit and a reader can see at a glance what the tool depends on.

/// Kernel activity (canonical name; versioned copies end in `_V<n>`).
pub const KERNEL: &str = "CUPTI_ACTIVITY_KIND_KERNEL";
/// Interned strings: kernel names, registered NVTX strings.
pub const STRING_IDS: &str = "StringIds";
/// NVTX ranges and marks.
pub const NVTX_EVENTS: &str = "NVTX_EVENTS";
/// Export metadata (schema 3.4 and later).
pub const META_DATA_EXPORT: &str = "META_DATA_EXPORT";
/// Export metadata (schema 3.0 to 3.1).
pub const EXPORT_META_DATA: &str = "EXPORT_META_DATA";
/// GPUs of the profiled node(s).
pub const TARGET_INFO_GPU: &str = "TARGET_INFO_GPU";
/// Processes of the capture.
pub const PROCESSES: &str = "PROCESSES";
/// Capture start in UTC.
pub const SESSION_START: &str = "TARGET_INFO_SESSION_START_TIME";
/// Name/value pairs of the capture's settings, the launched process's environment among them.
pub const META_DATA_CAPTURE: &str = "META_DATA_CAPTURE";
/// Name/value pairs of the target system (`Hostname`, `CpuCores`, driver version...).
pub const SYSTEM_ENV: &str = "TARGET_INFO_SYSTEM_ENV";
/// Memory copies (lazily created: absent when the capture has none).
pub const MEMCPY: &str = "CUPTI_ACTIVITY_KIND_MEMCPY";
/// Memory sets (lazily created: absent when the capture has none).
pub const MEMSET: &str = "CUPTI_ACTIVITY_KIND_MEMSET";
/// Labels of `copyKind` (schema 3.0 and later; absent in 2021-era exports).
pub const ENUM_MEMCPY_OPER: &str = "ENUM_CUDA_MEMCPY_OPER";
/// CUDA runtime and driver API calls (CPU side): the launch records of kernels.
pub const RUNTIME: &str = "CUPTI_ACTIVITY_KIND_RUNTIME";

/// Column names of the kernel table that the tool reads.
pub mod kernel {
    /// Start timestamp (ns).
    pub const START: &str = "start";
    /// End timestamp (ns).
    pub const END: &str = "end";
    /// nsys GPU id.
    pub const DEVICE: &str = "deviceId";
    /// CUDA stream id.
    pub const STREAM: &str = "streamId";
    /// Base name, a `StringIds` reference.
    pub const SHORT_NAME: &str = "shortName";
    /// Name with templates and arguments, a `StringIds` reference.
    pub const DEMANGLED_NAME: &str = "demangledName";
    /// Serialized process id.
    pub const GLOBAL_PID: &str = "globalPid";
    /// Id of the API call that launched the kernel, unique only within a process.
    pub const CORRELATION_ID: &str = "correlationId";
}

/// Column names of `TARGET_INFO_GPU` that the tool reads.
pub mod gpu {
    /// GPU id, the activity tables' `deviceId` (exports from 2021 on).
    pub const ID: &str = "id";
    /// The same id in 2020-era exports, which have no `id` column.
    pub const DEVICE_ID: &str = "deviceId";
    /// Marketing name.
    pub const NAME: &str = "name";
    /// The GPU's uuid.
    pub const UUID: &str = "uuid";
}

/// Column names of `NVTX_EVENTS` that the tool reads.
pub mod nvtx {
    /// Start timestamp (ns).
    pub const START: &str = "start";
    /// End timestamp (ns), NULL for marks and unterminated ranges.
    pub const END: &str = "end";
    /// Event type (`ENUM_NSYS_EVENT_TYPE`).
    pub const EVENT_TYPE: &str = "eventType";
    /// Message passed as a plain string.
    pub const TEXT: &str = "text";
    /// Message registered with `nvtxDomainRegisterString`, a `StringIds` reference.
    pub const TEXT_ID: &str = "textId";
    /// Serialized id of the thread that pushed or started the range.
    pub const GLOBAL_TID: &str = "globalTid";
    /// Domain handle, meaningful only together with the process; 0 is the default domain.
    pub const DOMAIN_ID: &str = "domainId";
    /// A range's extended payload: a header and the bytes a payload schema lays out (values
    /// only in exports made with `--include-blobs=true`).
    pub const BINARY_DATA: &str = "binaryData";
}

/// The NVTX payload schema tables (schema 3.13 and later) and the columns the tool reads.
pub mod payload {
    /// One row per registered payload schema.
    pub const SCHEMAS: &str = "NVTX_PAYLOAD_SCHEMAS";
    /// One row per entry (field) of a schema.
    pub const SCHEMA_ENTRIES: &str = "NVTX_PAYLOAD_SCHEMA_ENTRIES";
    /// Domain handle of the schema.
    pub const DOMAIN_ID: &str = "domainId";
    /// Schema id, as a payload header names it.
    pub const SCHEMA_ID: &str = "schemaId";
    /// Declared payload size in bytes (NULL when not declared).
    pub const PAYLOAD_SIZE: &str = "payloadSize";
    /// Entry index within its schema.
    pub const IDX: &str = "idx";
    /// Entry flags (pointer, array...).
    pub const FLAGS: &str = "flags";
    /// Entry type (`NVTX_PAYLOAD_ENTRY_TYPE_*`, an enum or a schema id).
    pub const TYPE: &str = "type";
    /// Entry name.
    pub const NAME: &str = "name";
    /// Entry offset in the payload (NULL for the first entry).
    pub const OFFSET: &str = "offset";
}

/// Column names of `CUPTI_ACTIVITY_KIND_RUNTIME` that the tool reads.
pub mod runtime {
    /// Start of the API call (ns).
    pub const START: &str = "start";
    /// End of the API call (ns).
    pub const END: &str = "end";
    /// Serialized id of the calling thread.
    pub const GLOBAL_TID: &str = "globalTid";
    /// Id shared with the GPU activity the call triggered, unique only within a process.
    pub const CORRELATION_ID: &str = "correlationId";
}

/// Column names of the memcpy and memset tables that the tool reads.
pub mod copy {
    /// Start timestamp (ns).
    pub const START: &str = "start";
    /// End timestamp (ns).
    pub const END: &str = "end";
    /// nsys GPU id.
    pub const DEVICE: &str = "deviceId";
    /// CUDA stream id.
    pub const STREAM: &str = "streamId";
    /// Bytes copied or set (B).
    pub const BYTES: &str = "bytes";
    /// Direction of a copy, an `ENUM_CUDA_MEMCPY_OPER` id (memcpy only).
    pub const COPY_KIND: &str = "copyKind";
}

/// Column names of the `ENUM_*` label tables.
pub mod enums {
    /// The numeric value.
    pub const ID: &str = "id";
    /// The human name, such as `Host-to-Device`.
    pub const LABEL: &str = "label";
    /// The symbolic name, such as `CUDA_MEMCPY_KIND_UVM_HTOD`.
    pub const NAME: &str = "name";
}

/// Metadata keys read from `META_DATA_EXPORT` / `EXPORT_META_DATA`.
pub mod meta {
    /// Export schema version, such as `3.25.0`.
    pub const SCHEMA_VERSION: &str = "EXPORT_SCHEMA_VERSION";
    /// nsys version, such as `2026.2.1.210`.
    pub const PRODUCT_VERSION: &str = "EXPORT_PRODUCT_VERSION";
    /// `true` when exported with `--ts-normalize=true`.
    pub const TIME_NORMALIZE: &str = "EXPORT_PARAM_TIME_NORMALIZE";
    /// The shift applied to timestamps at export (ns).
    pub const TIME_SHIFT: &str = "EXPORT_CONFIG_TIME_SHIFT";
    /// Written by tools that make synthetic or derived traces: who made it and how.
    pub const DERIVED_BY: &str = "DERIVED_BY";
    /// Written beside `DERIVED_BY` by tools that cut a slice of a capture: the capture's file.
    pub const DERIVED_FROM: &str = "DERIVED_FROM";
    /// And the slice's window on the capture's clock, `START-END` in ns.
    pub const DERIVED_WINDOW_NS: &str = "DERIVED_WINDOW_NS";
    /// The host the export ran on.
    pub const HOST: &str = "EXPORT_HOST";
    /// When the export ran, UTC.
    pub const TIME_UTC: &str = "EXPORT_TIME_UTC";
    /// The `.nsys-rep` file name (the `_PATH` rows hold absolute paths and are not kept).
    pub const INPUT_FILE: &str = "EXPORT_PARAM_INPUT_FILE";
    /// `true` when exported with `--include-blobs=true`: only then does
    /// `NVTX_EVENTS.binaryData` hold the ranges' payload values.
    pub const INCLUDE_BLOBS: &str = "EXPORT_PARAM_INCLUDE_BLOBS";
}
