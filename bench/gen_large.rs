//! Writes large synthetic traces for the benchmark suite (`bench/run`), never committed:
//!
//! ```text
//! cargo run --release --example gen-large -- OUT_DIR [--kernels N] [--devices D] [--files F]
//! ```
//!
//! `N` kernels in all (a count, or with a `k`/`M` suffix: `4M`), on `D` devices (8), in one
//! file `OUT_DIR/large-<N>.sqlite`, or with `--files F` (F divides D) in a trace set
//! `OUT_DIR/set-<F>x<N/F>/rank-<r>.sqlite`, one file per group of D/F ranks, two nodes.
//!
//! The workload is the one of `../shared/reference/nsys-ai-0.3.0.md` §9, so that both tools
//! read the same files: one process and CPU thread per device, compute stream `7+8d` and NCCL
//! stream `8+8d`; every iteration starts at a common barrier (the latest end of the previous
//! iteration over devices, plus a 1 ms host gap) with a memset and a host-to-device copy of the
//! batch; then 960 compute kernels back to back (six realistic names, near-normal durations,
//! 1-4 µs gaps), 40 collectives (AllGather in the forward half, ReduceScatter and AllReduce in the
//! backward half) on the NCCL stream, each starting on a rank when its compute reaches a fixed
//! kernel (plus jitter) and ending on every rank when the last rank has arrived plus the
//! transfer, so early ranks wait; the last device computes 5 % slower (a straggler); a
//! device-to-host copy of the loss at the end. One `cudaLaunchKernel` (or `cudaMemcpyAsync`,
//! `cudaMemsetAsync`) runtime row per activity 20-60 µs before it, with its `correlationId`; NVTX
//! push/pop ranges `train_step` > `forward`/`backward`/`optimizer.step` > one op range per layer
//! (`TransformerLayer.forward`/`.backward`), enclosing the launches. Capture clock from 50 s; the
//! second node of a set started its capture 3 ms later. Integers only: the same bytes on every
//! run. `tests/suite/engines.rs` includes this file for [`generate`]: a set of 100 per-rank files.

#[path = "../fixtures/nsys_ddl.rs"]
mod nsys_ddl;
#[path = "../fixtures/splitmix.rs"]
mod splitmix;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use rusqlite::{Connection, Statement, Transaction, params};

use splitmix::SplitMix as Rng;

const US: i64 = 1_000;
const MS: i64 = 1_000_000;
/// Compute kernels per device and iteration.
const COMPUTE: usize = 960;
/// Collectives per device and iteration.
const COLLECTIVES: usize = 40;
/// Kernels of one layer (one op range).
const LAYER: usize = 5;
/// How many compute kernels after its trigger a collective's result is needed.
const DEPENDS: usize = 8;
/// Optimizer kernels at the end of an iteration.
const OPTIMIZER: usize = 10;
/// The capture clock at the first iteration.
const FIRST_NS: i64 = 50_000 * MS;
const SEED: u64 = 0x1A26_E000_2026;
/// The serialized id of the virtual machine part of a global id.
const VM: i64 = 1 << 56;
/// Capture start (UTC) of the first node.
const SESSION_UTC_NS: i64 = 1_796_000_000_000_000_000;
/// The later capture start of the second node of a set.
const SECOND_NODE_LATER_NS: i64 = 3 * MS;

/// A compute kernel kind: short name, demangled name, mean and spread of its duration (ns).
struct Kind {
    short: &'static str,
    demangled: &'static str,
    mean: i64,
    spread: i64,
}

const GEMM: usize = 0;
const FLASH_FWD: usize = 1;
const FLASH_BWD: usize = 2;
const ELEMENTWISE: usize = 3;
const LAYERNORM: usize = 4;
const OPTIMIZER_KIND: usize = 5;

const KINDS: [Kind; 6] = [
    Kind {
        short: "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
        demangled: "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
        mean: 180 * US,
        spread: 40 * US,
    },
    Kind {
        short: "flash_fwd_kernel",
        demangled: "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t>>, false, true, false, false, false, true, false, false>(Flash_fwd_params)",
        mean: 120 * US,
        spread: 20 * US,
    },
    Kind {
        short: "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel",
        demangled: "void flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t>>, false, true, false, false, false, false>(Flash_bwd_params)",
        mean: 260 * US,
        spread: 50 * US,
    },
    Kind {
        short: "vectorized_elementwise_kernel",
        demangled: "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase &, at::native::GeluType)::[lambda() (instance 1)]::operator ()() const::[lambda() (instance 4)]::operator ()() const::[lambda(c10::BFloat16) (instance 1)], std::array<char *, 2>>(int, T2, T3)",
        mean: 9 * US,
        spread: 3 * US,
    },
    Kind {
        short: "layer_norm_kernel",
        demangled: "void transformer_engine::normalization::ln_fwd_tuned_kernel<transformer_engine::normalization::Kernel_traits<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, float, unsigned int, 4096u, 1u, 1u, 4u, 16u, 1u>>(transformer_engine::normalization::FwdParams)",
        mean: 14 * US,
        spread: 4 * US,
    },
    Kind {
        short: "multi_tensor_apply_kernel",
        demangled: "void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float, float, int>, float, float, float, float, float, float, adamMode_t, float>(long, int volatile *, T1, T2, T3...)",
        mean: 30 * US,
        spread: 8 * US,
    },
];

/// The collective kinds, each with its short and demangled name (the same text in nsys).
const COLLECTIVE_NAMES: [&str; 3] = [
    "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
];
const API_KERNEL: &str = "cudaLaunchKernel_v7000";
const API_MEMCPY: &str = "cudaMemcpyAsync_v3020";
const API_MEMSET: &str = "cudaMemsetAsync_v3020";
const RANGE_STEP: &str = "train_step";
const RANGE_FORWARD: &str = "forward";
const RANGE_BACKWARD: &str = "backward";
const RANGE_OPTIMIZER: &str = "optimizer.step";
const RANGE_LAYER_FWD: &str = "TransformerLayer.forward";
const RANGE_LAYER_BWD: &str = "TransformerLayer.backward";

/// The interned strings, ids from 1 in this order.
fn strings() -> Vec<&'static str> {
    let mut out = Vec::new();
    for k in &KINDS {
        out.push(k.short);
        if k.demangled != k.short {
            out.push(k.demangled);
        }
    }
    out.extend(COLLECTIVE_NAMES);
    out.extend([API_KERNEL, API_MEMCPY, API_MEMSET]);
    out
}

fn string_id(s: &str) -> i64 {
    strings().iter().position(|&x| x == s).map(|i| i as i64 + 1).expect("interned")
}

/// The generator's random stream keyed by `parts` (see `fixtures/splitmix.rs`).
fn seeded(parts: &[u64]) -> Rng {
    Rng::keyed(SEED, parts)
}

/// Near-normal (the mean of four uniforms) with this mean and spread, at least 1 µs.
fn near_normal(rng: &mut Rng, mean: i64, spread: i64) -> i64 {
    let sum: i64 = (0..4).map(|_| rng.int(-spread * 2, spread * 2)).sum();
    (mean + sum / 4).max(US)
}

/// The kind of compute kernel `i` of an iteration.
fn kind_of(i: usize) -> usize {
    if i >= COMPUTE - OPTIMIZER {
        return OPTIMIZER_KIND;
    }
    let forward = i < (COMPUTE - OPTIMIZER) / 2;
    let pattern = if forward {
        [LAYERNORM, GEMM, FLASH_FWD, GEMM, ELEMENTWISE]
    } else {
        [ELEMENTWISE, GEMM, FLASH_BWD, GEMM, LAYERNORM]
    };
    pattern[i % LAYER]
}

/// The compute kernel whose start triggers collective `c`.
fn trigger(c: usize) -> usize {
    (c + 1) * (COMPUTE - OPTIMIZER) / (COLLECTIVES + 1)
}

fn collective_name(c: usize) -> &'static str {
    if c < COLLECTIVES / 2 {
        COLLECTIVE_NAMES[0]
    } else if c % 4 == 3 {
        COLLECTIVE_NAMES[2]
    } else {
        COLLECTIVE_NAMES[1]
    }
}

/// One GPU activity of a device in an iteration.
#[derive(Clone, Copy)]
enum What {
    Kernel { short: i64, demangled: i64, stream: i64 },
    Memcpy { kind: i64, bytes: i64 },
    Memset { bytes: i64 },
}

#[derive(Clone, Copy)]
struct Activity {
    start: i64,
    end: i64,
    what: What,
    /// Index of the compute kernel it was launched next to (the launch order).
    order: (usize, usize),
}

/// The rows of one device and iteration, before insertion.
struct DeviceIteration {
    activities: Vec<Activity>,
}

/// Lays out one iteration of every device from `start`; returns the rows and the iteration's
/// end over devices. Devices advance kernel by kernel in lockstep so that a collective can be
/// placed once every rank has reached its trigger, and the compute kernel `DEPENDS` after the
/// trigger waits for the collective's end (the data it brings): each collective realigns the
/// ranks, and the straggler's lag between two collectives is what the others wait for.
fn iteration(it: u64, devices: usize, start: i64) -> (Vec<DeviceIteration>, i64) {
    let mut rngs: Vec<Rng> = (0..devices).map(|d| seeded(&[1, it, d as u64])).collect();
    let mut out: Vec<DeviceIteration> = Vec::with_capacity(devices);
    let mut t = Vec::with_capacity(devices);
    for rng in rngs.iter_mut() {
        let mut acts = Vec::with_capacity(COMPUTE + COLLECTIVES + 3);
        let set_end = start + rng.int(15, 25) * US;
        acts.push(Activity {
            start,
            end: set_end,
            what: What::Memset { bytes: 512 << 20 },
            order: (0, 0),
        });
        let h2d = set_end + rng.int(2, 6) * US;
        let h2d_end = h2d + rng.int(240, 280) * US;
        acts.push(Activity {
            start: h2d,
            end: h2d_end,
            what: What::Memcpy { kind: 1, bytes: 8 << 20 },
            order: (0, 1),
        });
        t.push(h2d_end);
        out.push(DeviceIteration { activities: acts });
    }
    let mut nccl_free = vec![i64::MIN; devices];
    // The end of the collective the compute kernel at this index waits for.
    let mut waits: Vec<(usize, i64)> = Vec::new();
    let mut starts = vec![0i64; devices];
    let mut c = 0;
    for i in 0..COMPUTE {
        let k = &KINDS[kind_of(i)];
        let gate = waits.iter().filter(|w| w.0 == i).map(|w| w.1).max();
        for d in 0..devices {
            let rng = &mut rngs[d];
            let mut dur = near_normal(rng, k.mean, k.spread);
            if d == devices - 1 {
                dur += dur / 20;
            }
            let s = (t[d] + rng.int(1, 4) * US).max(gate.map_or(i64::MIN, |g| g + 2 * US));
            starts[d] = s;
            out[d].activities.push(Activity {
                start: s,
                end: s + dur,
                what: What::Kernel {
                    short: string_id(k.short),
                    demangled: string_id(k.demangled),
                    stream: 7 + 8 * d as i64,
                },
                order: (i, 0),
            });
            t[d] = s + dur;
        }
        while c < COLLECTIVES && trigger(c) == i {
            let arrivals: Vec<i64> = (0..devices)
                .map(|d| {
                    let jitter = seeded(&[2, it, c as u64, d as u64]).int(0, 30) * US;
                    (starts[d] + jitter).max(nccl_free[d] + 2 * US)
                })
                .collect();
            let last = *arrivals.iter().max().expect("devices");
            let end = last + seeded(&[3, it, c as u64]).int(150, 600) * US;
            let name = string_id(collective_name(c));
            for (d, &a) in arrivals.iter().enumerate() {
                nccl_free[d] = end;
                out[d].activities.push(Activity {
                    start: a,
                    end,
                    what: What::Kernel { short: name, demangled: name, stream: 8 + 8 * d as i64 },
                    order: (i, 1),
                });
            }
            waits.push((i + DEPENDS, end));
            c += 1;
        }
    }
    let mut end = i64::MIN;
    for (d, rng) in rngs.iter_mut().enumerate() {
        let d2h = t[d].max(nccl_free[d]) + rng.int(2, 5) * US;
        let d2h_end = d2h + rng.int(4, 7) * US;
        out[d].activities.push(Activity {
            start: d2h,
            end: d2h_end,
            what: What::Memcpy { kind: 2, bytes: 4 },
            order: (COMPUTE, 0),
        });
        end = end.max(d2h_end);
    }
    (out, end)
}

/// One CPU-side row: a launch or an NVTX range.
struct Nvtx {
    start: i64,
    end: i64,
    text: &'static str,
}

struct Writer<'a> {
    kernel: Statement<'a>,
    runtime: Statement<'a>,
    memcpy: Statement<'a>,
    memset: Statement<'a>,
    nvtx: Statement<'a>,
    /// The NVTX rows of the device being written.
    ranges: Vec<Nvtx>,
}

/// The id counters of one rank's file.
struct Counters {
    correlation: i64,
    grid: i64,
}

/// The ranks a file holds and how its clock relates to the first node's.
struct FileSpec {
    path: PathBuf,
    /// Global rank numbers in this file.
    ranks: Vec<usize>,
    /// Devices per node: the device id of rank r is `r % per_node`.
    per_node: usize,
    /// Subtracted from every time of this file (its capture started this much later).
    shift: i64,
    host: String,
    session_utc_ns: i64,
}

fn global_pid(pid: i64) -> i64 {
    VM | (pid << 24)
}

fn pid_of(rank: usize) -> i64 {
    41_000 + rank as i64
}

fn main_tid(rank: usize) -> i64 {
    global_pid(pid_of(rank)) | pid_of(rank)
}

/// Inserts one device's iteration: its GPU rows, their launches and its NVTX ranges.
fn insert_device(
    w: &mut Writer,
    file: &FileSpec,
    rank: usize,
    di: &mut DeviceIteration,
    it: u64,
    ids: &mut Counters,
) -> rusqlite::Result<u64> {
    let device = (rank % file.per_node) as i64;
    let gpid = global_pid(pid_of(rank));
    let tid = main_tid(rank);
    let sh = file.shift;
    // Launches in issue order: the CPU thread issues activities in the order of the compute
    // kernels they sit next to, each 20-60 µs before the activity starts, never overlapping.
    di.activities.sort_by_key(|a| a.order);
    let mut rng = seeded(&[4, it, rank as u64]);
    let mut cpu = i64::MIN;
    let mut launches: Vec<(i64, i64)> = Vec::with_capacity(di.activities.len());
    for a in &di.activities {
        let s = (a.start - rng.int(20, 60) * US).max(cpu + US);
        let e = s + rng.int(3, 8) * US;
        cpu = e;
        launches.push((s, e));
    }
    let mut kernels = 0;
    for (a, &(ls, le)) in di.activities.iter().zip(&launches) {
        ids.correlation += 1;
        let api = match a.what {
            What::Kernel { short, demangled, stream } => {
                ids.grid += 1;
                kernels += 1;
                w.kernel.execute(params![
                    a.start - sh,
                    a.end - sh,
                    device,
                    stream,
                    ids.correlation,
                    gpid,
                    demangled,
                    short,
                    ids.grid,
                ])?;
                API_KERNEL
            }
            What::Memcpy { kind, bytes } => {
                w.memcpy.execute(params![
                    a.start - sh,
                    a.end - sh,
                    device,
                    7 + 8 * device,
                    ids.correlation,
                    gpid,
                    bytes,
                    kind,
                    if kind == 1 { 0 } else { 2 },
                    if kind == 1 { 2 } else { 0 },
                ])?;
                API_MEMCPY
            }
            What::Memset { bytes } => {
                w.memset.execute(params![
                    a.start - sh,
                    a.end - sh,
                    device,
                    7 + 8 * device,
                    ids.correlation,
                    gpid,
                    bytes
                ])?;
                API_MEMSET
            }
        };
        w.runtime.execute(params![ls - sh, le - sh, tid, ids.correlation, string_id(api)])?;
    }
    // NVTX: train_step > forward | backward | optimizer.step > one range per layer. The layer
    // ranges follow the compute kernels' launch order; every launch sits in its layer's range.
    let first = launches.first().expect("activities").0;
    let last = launches.last().expect("activities").1;
    let compute: Vec<(usize, (i64, i64))> = di
        .activities
        .iter()
        .zip(&launches)
        .filter(|(a, _)| a.order.0 < COMPUTE)
        .map(|(a, &l)| (a.order.0, l))
        .collect();
    let half = (COMPUTE - OPTIMIZER) / 2;
    let span = |lo: usize, hi: usize| -> (i64, i64) {
        let inside = compute.iter().filter(|(i, _)| (lo..hi).contains(i));
        let s = inside.clone().map(|(_, l)| l.0).min().expect("launches");
        let e = inside.map(|(_, l)| l.1).max().expect("launches");
        (s - 200, e + 200)
    };
    w.ranges.push(Nvtx { start: first - 20 * US, end: last + 10 * US, text: RANGE_STEP });
    for (lo, hi, text) in [
        (0, half, RANGE_FORWARD),
        (half, COMPUTE - OPTIMIZER, RANGE_BACKWARD),
        (COMPUTE - OPTIMIZER, COMPUTE, RANGE_OPTIMIZER),
    ] {
        let (s, e) = span(lo, hi);
        w.ranges.push(Nvtx { start: s - 300, end: e + 300, text });
        if text != RANGE_OPTIMIZER {
            let layer = if text == RANGE_FORWARD { RANGE_LAYER_FWD } else { RANGE_LAYER_BWD };
            for l in (lo..hi).step_by(LAYER) {
                let (s, e) = span(l, (l + LAYER).min(hi));
                w.ranges.push(Nvtx { start: s, end: e, text: layer });
            }
        }
    }
    for n in std::mem::take(&mut w.ranges) {
        w.nvtx.execute(params![n.start - sh, n.end - sh, n.text, tid])?;
    }
    Ok(kernels)
}

fn write_file(file: &FileSpec, devices: usize, iterations: u64) -> rusqlite::Result<u64> {
    match std::fs::remove_file(&file.path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
                Some(format!("cannot remove {}: {e}", file.path.display())),
            ));
        }
    }
    let mut conn = Connection::open(&file.path)?;
    conn.execute_batch("PRAGMA page_size = 4096; PRAGMA synchronous = OFF;")?;
    let _mode: String = conn.query_row("PRAGMA journal_mode = OFF", [], |r| r.get(0))?;
    let tx = conn.transaction()?;
    for ddl in [
        nsys_ddl::META_DATA_EXPORT,
        nsys_ddl::STRING_IDS,
        nsys_ddl::CUPTI_ACTIVITY_KIND_KERNEL,
        nsys_ddl::CUPTI_ACTIVITY_KIND_RUNTIME,
        nsys_ddl::CUPTI_ACTIVITY_KIND_MEMCPY,
        nsys_ddl::CUPTI_ACTIVITY_KIND_MEMSET,
        nsys_ddl::NVTX_EVENTS,
        nsys_ddl::TARGET_INFO_SESSION_START_TIME,
        nsys_ddl::TARGET_INFO_SYSTEM_ENV,
        nsys_ddl::ANALYSIS_DETAILS,
        nsys_ddl::PROCESSES,
        nsys_ddl::TARGET_INFO_GPU,
        nsys_ddl::TARGET_INFO_CUDA_DEVICE,
        nsys_ddl::ENUM_NSYS_EVENT_TYPE,
        nsys_ddl::ENUM_NSYS_EVENT_CLASS,
        nsys_ddl::ENUM_CUDA_MEMCPY_OPER,
    ] {
        tx.execute_batch(ddl)?;
    }
    insert_info(&tx, file)?;
    let kernels = insert_activity(&tx, file, devices, iterations)?;
    tx.commit()?;
    conn.close().map_err(|(_, e)| e)?;
    Ok(kernels)
}

fn insert_activity(
    tx: &Transaction,
    file: &FileSpec,
    devices: usize,
    iterations: u64,
) -> rusqlite::Result<u64> {
    let mut w = Writer {
        kernel: tx.prepare(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?1, ?2, ?3, 1, NULL, ?4, ?5, ?6, ?7, \
             ?8, NULL, 1, 0, 128, 264, 1, 1, 384, 1, 1, 0, 232448, 0, 0, ?9, 0, NULL, 1, NULL, \
             NULL, NULL, NULL, 1, 1, 1, 0, 1, 1, NULL, '[]')",
        )?,
        runtime: tx.prepare(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?1, ?2, 0, ?3, ?4, ?5, 0, NULL)",
        )?,
        memcpy: tx.prepare(
            "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?1, ?2, ?3, 1, NULL, ?4, ?5, ?6, ?7, \
             ?8, NULL, ?9, ?10, ?3, 1, ?3, 1, 0, NULL, NULL, 1)",
        )?,
        memset: tx.prepare(
            "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (?1, ?2, ?3, 1, NULL, ?4, ?5, ?6, 0, \
             ?7, NULL, 2)",
        )?,
        nvtx: tx.prepare(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, endGlobalTid, \
             domainId) VALUES (?1, ?2, 59, ?3, ?4, ?4, 0)",
        )?,
        ranges: Vec::new(),
    };
    let mut ids: Vec<Counters> = file
        .ranks
        .iter()
        .map(|&r| Counters { correlation: 1_000 + r as i64 * 7, grid: 100 })
        .collect();
    let mut kernels = 0;
    let mut start = FIRST_NS;
    for it in 0..iterations {
        let (mut rows, end) = iteration(it, devices, start);
        for (j, &rank) in file.ranks.iter().enumerate() {
            kernels += insert_device(&mut w, file, rank, &mut rows[rank], it, &mut ids[j])?;
        }
        start = end + MS;
    }
    Ok(kernels)
}

fn insert_info(tx: &Transaction, file: &FileSpec) -> rusqlite::Result<()> {
    let mut st = tx.prepare("INSERT INTO META_DATA_EXPORT (name, value) VALUES (?1, ?2)")?;
    for (name, value) in [
        ("EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems"),
        ("EXPORT_PRODUCT_VERSION", "2026.2.1.210"),
        ("EXPORT_SCHEMA_VERSION", "3.25.0"),
        ("EXPORT_SCHEMA_VERSION_MAJOR", "3"),
        ("EXPORT_SCHEMA_VERSION_MINOR", "25"),
        ("EXPORT_SCHEMA_VERSION_MICRO", "0"),
        ("EXPORT_PARAM_EXPORT_TYPE", "SQLite"),
        ("EXPORT_PARAM_TIME_NORMALIZE", "false"),
        // As nsys 2026.2 records the default `--include-blobs=false`.
        ("EXPORT_PARAM_INCLUDE_BLOBS", "false"),
        ("DERIVED_BY", "verdict gen-large (synthetic benchmark trace)"),
    ] {
        st.execute(params![name, value])?;
    }
    let mut st = tx.prepare("INSERT INTO StringIds (id, value) VALUES (?1, ?2)")?;
    for (i, s) in strings().iter().enumerate() {
        st.execute(params![i as i64 + 1, s])?;
    }
    tx.execute(
        "INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (?1, '2026-11-30T10:13:20', \
         '2026-11-30T10:13:20', ?2)",
        params![file.session_utc_ns, 7_000_000 * MS],
    )?;
    tx.execute("INSERT INTO ANALYSIS_DETAILS VALUES (?1, 0, ?2, ?2)", params![VM, 7_000_000 * MS])?;
    let mut st =
        tx.prepare("INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES (?1, 'Local (CLI)', ?2, ?3, ?4)")?;
    for (name, id, value) in [
        ("CpuCores", 1, "224"),
        ("Hostname", 619, file.host.as_str()),
        ("HasNvtxEvents", 809, "1"),
        ("HasCudaEvents", 812, "1"),
    ] {
        st.execute(params![VM, name, id, value])?;
    }
    let mut st = tx.prepare("INSERT INTO PROCESSES (globalPid, pid, name) VALUES (?1, ?2, ?3)")?;
    for &r in &file.ranks {
        st.execute(params![global_pid(pid_of(r)), pid_of(r), "python3"])?;
    }
    let mut gpu = tx.prepare(
        "INSERT INTO TARGET_INFO_GPU VALUES (?1, ?2, 'NVIDIA H100 80GB HBM3', ?3, 1, 52428800, \
         85031714816, 3352320000000, 1980000000, 132, ?2, ?4, 0, 'GH100', ?2, '', '', 161, 0, \
         65536, 4, 65536, 49152, 232448, 233472, 65536, 32, 3, 64, 32, 1024, 1024, 1024, 64, \
         2147483647, 65535, 65535, 9, 0, 9, 0)",
    )?;
    let mut cuda =
        tx.prepare("INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (?1, ?1, ?2, NULL, 132)")?;
    for &r in &file.ranks {
        let device = (r % file.per_node) as i64;
        let uuid = format!("GPU-{:08x}-0000-4000-8000-{:012x}", r, SEED & 0xffff_ffff_ffff);
        gpu.execute(params![VM, device, format!("0000:{:02x}:00.0", 0x18 + 0x10 * device), uuid])?;
        cuda.execute(params![device, pid_of(r)])?;
    }
    let mut st = tx.prepare("INSERT INTO ENUM_NSYS_EVENT_TYPE VALUES (?1, ?2, ?2)")?;
    for (id, name) in
        [(59, "NvtxPushPopRange"), (60, "NvtxStartEndRange"), (75, "NvtxDomainCreate")]
    {
        st.execute(params![id, name])?;
    }
    let mut st = tx.prepare("INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES (?1, ?2, ?3)")?;
    for (id, name, label) in [
        (0, "TRACE_PROCESS_EVENT_CUDA_RUNTIME", "CUDA runtime"),
        (1, "TRACE_PROCESS_EVENT_CUDA_DRIVER", "CUDA driver"),
    ] {
        st.execute(params![id, name, label])?;
    }
    let mut st = tx.prepare("INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (?1, ?2, ?3)")?;
    for (id, name, label) in [
        (0, "CUDA_MEMCPY_KIND_UNKNOWN", "Unknown"),
        (1, "CUDA_MEMCPY_KIND_HTOD", "Host-to-Device"),
        (2, "CUDA_MEMCPY_KIND_DTOH", "Device-to-Host"),
        (8, "CUDA_MEMCPY_KIND_DTOD", "Device-to-Device"),
        (10, "CUDA_MEMCPY_KIND_PTOP", "Peer-to-Peer"),
    ] {
        st.execute(params![id, name, label])?;
    }
    Ok(())
}

/// `4M`, `500k`, `16000000`.
fn parse_count(s: &str) -> Option<u64> {
    let (digits, mul) = match s.as_bytes().last()? {
        b'k' | b'K' => (&s[..s.len() - 1], 1_000),
        b'm' | b'M' => (&s[..s.len() - 1], 1_000_000),
        _ => (s, 1),
    };
    digits.parse::<u64>().ok().map(|n| n * mul)
}

fn spell(n: u64) -> String {
    if n.is_multiple_of(1_000_000) {
        format!("{}m", n / 1_000_000)
    } else if n.is_multiple_of(1_000) {
        format!("{}k", n / 1_000)
    } else {
        n.to_string()
    }
}

struct Args {
    out: PathBuf,
    kernels: u64,
    devices: usize,
    files: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mut args = Args { out: PathBuf::new(), kernels: 4_000_000, devices: 8, files: 1 };
    let mut out = None;
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--kernels" => {
                let v = value("--kernels")?;
                args.kernels = parse_count(&v).ok_or(format!("--kernels: not a count: {v}"))?;
            }
            "--devices" => {
                args.devices = value("--devices")?.parse().map_err(|e| format!("--devices: {e}"))?
            }
            "--files" => {
                args.files = value("--files")?.parse().map_err(|e| format!("--files: {e}"))?
            }
            "-h" | "--help" => {
                return Err(
                    "usage: gen-large OUT_DIR [--kernels N] [--devices D] [--files F]".to_string()
                );
            }
            _ if out.is_none() && !a.starts_with('-') => out = Some(PathBuf::from(a)),
            _ => return Err(format!("unexpected argument `{a}`")),
        }
    }
    args.out = out.ok_or("usage: gen-large OUT_DIR [--kernels N] [--devices D] [--files F]")?;
    let per_iteration = (args.devices * (COMPUTE + COLLECTIVES)) as u64;
    if args.devices < 2 || args.files == 0 || !args.devices.is_multiple_of(args.files) {
        return Err("--devices must be at least 2 and a multiple of --files".to_string());
    }
    if args.kernels == 0 || !args.kernels.is_multiple_of(per_iteration) {
        return Err(format!(
            "--kernels must be a positive multiple of {per_iteration} ({} per device and iteration)",
            COMPUTE + COLLECTIVES
        ));
    }
    Ok(args)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("gen-large: {e}");
            return ExitCode::from(2);
        }
    };
    let began = Instant::now();
    match generate(&args.out, args.kernels, args.devices, args.files) {
        Ok((paths, total, iterations)) => {
            for p in &paths {
                println!("{}", p.display());
            }
            eprintln!(
                "gen-large: {total} kernels on {} devices in {} file(s), {iterations} iterations, {:.1} s",
                args.devices,
                args.files,
                began.elapsed().as_secs_f64()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gen-large: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Writes `kernels` kernels on `devices` devices into `files` files under `out` (see the
/// top of this file); returns the files, the kernels written and the iterations.
pub(crate) fn generate(
    out: &std::path::Path,
    kernels: u64,
    devices: usize,
    files: usize,
) -> Result<(Vec<PathBuf>, u64, u64), String> {
    let iterations = kernels / (devices * (COMPUTE + COLLECTIVES)) as u64;
    let per_file = devices / files;
    let per_node = if files == 1 { devices } else { devices.div_ceil(2) };
    let dir = if files == 1 {
        out.to_path_buf()
    } else {
        out.join(format!("set-{}x{}", files, spell(kernels / files as u64)))
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let specs: Vec<FileSpec> = (0..files)
        .map(|f| {
            let ranks: Vec<usize> = (f * per_file..(f + 1) * per_file).collect();
            let node = ranks[0] / per_node;
            let shift = node as i64 * SECOND_NODE_LATER_NS;
            let path = if files == 1 {
                dir.join(format!("large-{}.sqlite", spell(kernels)))
            } else {
                dir.join(format!("rank-{f}.sqlite"))
            };
            FileSpec {
                path,
                ranks,
                per_node,
                shift,
                host: format!("gpu-node{node}"),
                session_utc_ns: SESSION_UTC_NS + shift,
            }
        })
        .collect();
    // Files of a set are independent: write them on every core.
    let results: Vec<(usize, rusqlite::Result<u64>)> = std::thread::scope(|s| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let chunks: Vec<Vec<(usize, &FileSpec)>> =
            (0..cores).map(|c| specs.iter().enumerate().skip(c).step_by(cores).collect()).collect();
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .into_iter()
                        .map(|(i, f)| (i, write_file(f, devices, iterations)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().expect("writer thread")).collect()
    });
    let mut total = 0;
    for (i, r) in results {
        total += r.map_err(|e| format!("{}: {e}", specs[i].path.display()))?;
    }
    Ok((specs.into_iter().map(|f| f.path).collect(), total, iterations))
}
