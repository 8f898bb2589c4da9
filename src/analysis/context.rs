//! The [`Context`] of one trace, which every analysis of it shares: the one scan, its kernels,
//! copies and NVTX ranges as the planned analyses need them, the devices it covers and the
//! evidence each analysis starts from; loading it from a trace, or making it from kernels.

use super::*;

/// Everything the analyses of one trace share: the one scan and what is known around it.
#[derive(Debug, Clone)]
pub struct Context {
    /// Identity of the file.
    pub trace: TraceRef,
    /// The kernel rows of the scan.
    pub kernels: Kernels,
    /// The memcpy/memset rows, read with the same filter when a planned analysis needs them.
    pub copies: Option<crate::trace::Copies>,
    /// NVTX ranges and launch records, read when a planned analysis needs them.
    pub nvtx: Option<NvtxData>,
    /// Devices, GPUs and time ranges of the whole trace.
    pub inventory: Inventory,
    /// Devices the job should have (`--expect-devices`, or the claims file).
    pub expected_devices: Option<Vec<i64>>,
}

impl Context {
    /// Devices with kernels anywhere in the trace.
    pub fn present_devices(&self) -> Vec<i64> {
        self.inventory.present_devices()
    }

    /// Devices the job should have but that ran no kernel: the expected set if given, else
    /// the GPUs listed in `TARGET_INFO_GPU`.
    pub fn missing_devices(&self) -> Vec<i64> {
        let present = self.present_devices();
        match &self.expected_devices {
            Some(exp) => exp.iter().copied().filter(|d| !present.contains(d)).collect(),
            None => self.inventory.listed_without_kernels(),
        }
    }

    /// Resolves a device selection, refusing devices without kernels.
    pub fn resolve_devices(&self, sel: &DeviceSel) -> Result<Vec<i64>, QueryError> {
        let present = self.present_devices();
        if present.is_empty() {
            return Err(QueryError::NoKernels);
        }
        let devices = sel.resolve(&present);
        for d in &devices {
            if !present.contains(d) {
                return Err(QueryError::UnknownDevice {
                    device: *d,
                    present: format_device_list(&present),
                });
            }
        }
        Ok(devices)
    }

    /// First kernel start and last kernel end over the given devices, in the whole trace.
    pub fn kernel_range_of(&self, devices: &[i64]) -> Option<[i64; 2]> {
        let inv: Vec<_> = self
            .inventory
            .devices
            .iter()
            .filter(|d| devices.contains(&d.device))
            .cloned()
            .collect();
        crate::trace::kernel_range(&inv)
    }

    /// Refuses a window that selects no kernel time of the given devices.
    pub fn check_window(&self, window: Option<Window>, devices: &[i64]) -> Result<(), QueryError> {
        let Some(w) = window else { return Ok(()) };
        let [first, last] = self.kernel_range_of(devices).unwrap_or([0, 0]);
        if w.end_ns <= first || w.start_ns >= last {
            return Err(QueryError::WindowOutside {
                window: w.to_string(),
                first: format_seconds(first),
                last: format_seconds(last),
            });
        }
        Ok(())
    }

    pub(super) fn evidence(
        &self,
        spec: &AnalysisSpec,
        params: &Params,
        devices: Vec<i64>,
    ) -> Evidence {
        Evidence {
            analysis: spec.name.to_string(),
            tool: ToolRef::current(),
            trace: self.trace.clone(),
            window: WindowInfo {
                requested_ns: params.window.map(|w| w.as_array()),
                effective_ns: None,
                semantics: params.semantics,
            },
            scope: ScopeInfo {
                devices,
                present_devices: self.present_devices(),
                missing_devices: self.missing_devices(),
                streams: None,
            },
            parameters: BTreeMap::new(),
            metrics: spec.metrics(),
            values: None,
            rows: None,
            notes: Vec::new(),
            samples: Vec::new(),
        }
    }
}

impl Context {
    /// A context over in-memory kernels, with no GPU table and a placeholder identity; used
    /// by tests and by callers that build kernels themselves.
    pub fn from_kernels(kernels: Kernels) -> Context {
        let devices = kernels.inventory.clone();
        let kernel_range_ns = crate::trace::kernel_range(&devices);
        Context {
            trace: TraceRef {
                path: "<memory>".into(),
                sha256: String::new(),
                schema_version: None,
                nsys_version: Some(None),
                format: None,
                time_base: "session".into(),
                capture_start_ns: None,
                origin: Default::default(),
                columnar: None,
                set: None,
            },
            inventory: Inventory {
                devices,
                listed_gpus: None,
                processes: None,
                nvtx_events: None,
                kernel_range_ns,
                skipped_invalid: kernels.skipped_invalid,
                payload_schemas: false,
            },
            kernels,
            copies: None,
            nvtx: None,
            expected_devices: None,
        }
    }

    /// The same, with NVTX ranges and launch records (the kernels should carry launch keys).
    pub fn with_nvtx(mut self, nvtx: NvtxData) -> Context {
        self.nvtx = Some(nvtx);
        self
    }

    /// The same, with memcpy/memset rows.
    pub fn with_copies(mut self, copies: crate::trace::Copies) -> Context {
        self.copies = Some(copies);
        self
    }
}

impl Context {
    /// The tables of [`Context::load`]: kernels, then copies and NVTX as needed.
    #[allow(clippy::type_complexity)]
    fn load_tables(
        trace: &crate::trace::Trace,
        filter: &crate::trace::KernelFilter,
        needs: &[Table],
        with_nvtx: bool,
        progress: &mut dyn FnMut(u64),
    ) -> Result<(Kernels, Option<crate::trace::Copies>, Option<NvtxData>), crate::trace::TraceError>
    {
        let keyed = keyed_filter(filter, needs);
        let kernels = match &keyed {
            Some(f) => Kernels::load_with_launch_keys(trace, f, progress)?,
            None => Kernels::load(trace, filter, progress)?,
        };
        let copies = if needs.contains(&Table::Copies) {
            Some(crate::trace::Copies::load(trace, filter)?)
        } else {
            None
        };
        let nvtx = match keyed {
            Some(_) if with_nvtx => {
                Some(NvtxData::load(trace, NvtxData::bounds(filter, needs), &kernels, |_| true)?)
            }
            _ => None,
        };
        Ok((kernels, copies, nvtx))
    }

    /// Scans a trace once for everything one command needs: the kernel table always, every
    /// other table in `needs` once, with the same filter, hashing the file on a second thread
    /// meanwhile.
    pub fn load(
        trace: &crate::trace::Trace,
        filter: &crate::trace::KernelFilter,
        expected_devices: Option<Vec<i64>>,
        needs: &[Table],
        progress: &mut dyn FnMut(u64),
    ) -> Result<Context, crate::trace::TraceError> {
        let needs = resolve_ties(needs, [trace], crate::trace::payload::nccl_ties_recorded)?;
        Self::load_parts(trace, filter, expected_devices, &needs, true, progress)
    }

    /// [`Context::load`]; with `with_nvtx` false, a scan that needs NVTX reads the kernels'
    /// launch keys but leaves the launch records and ranges to [`NvtxData::load`] (a set
    /// knows which rows need them only once its ranks are numbered).
    pub(crate) fn load_parts(
        trace: &crate::trace::Trace,
        filter: &crate::trace::KernelFilter,
        expected_devices: Option<Vec<i64>>,
        needs: &[Table],
        with_nvtx: bool,
        progress: &mut dyn FnMut(u64),
    ) -> Result<Context, crate::trace::TraceError> {
        let path = trace.path().to_path_buf();
        let known = trace.known_digest();
        // The file is hashed on another thread while every table is read.
        let (tables, sha) = std::thread::scope(|s| {
            let hasher = s.spawn(move || match known {
                Some(digest) => Ok(digest),
                None => crate::trace::sha256_file(&path),
            });
            let tables = Self::load_tables(trace, filter, needs, with_nvtx, progress);
            let sha = hasher
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("hashing thread panicked")));
            (tables, sha)
        });
        let (kernels, copies, nvtx) = tables?;
        let inventory = trace.inventory(&kernels)?;
        let schema = trace.schema();
        Ok(Context {
            trace: TraceRef {
                path: trace.path().display().to_string(),
                sha256: sha?,
                schema_version: schema.schema_version.clone(),
                nsys_version: schema.source.is_nsys().then(|| schema.nsys_version.clone()),
                format: schema.source.format().map(str::to_string),
                time_base: match schema.time_base {
                    crate::trace::TimeBase::Session => "session".into(),
                    crate::trace::TimeBase::Utc { .. } => "utc".into(),
                    crate::trace::TimeBase::Unrecorded => "unrecorded".into(),
                    crate::trace::TimeBase::Host { .. } => "host".into(),
                },
                capture_start_ns: match schema.time_base {
                    crate::trace::TimeBase::Utc { shift_ns } => {
                        shift_ns.or(schema.session_start_utc_ns)
                    }
                    // The host clock of a PyTorch profiler trace reads better from its first
                    // event, as a UTC-epoch one does from the capture start.
                    crate::trace::TimeBase::Host { .. } => {
                        schema.source.kineto().and_then(|k| k.first_ts_ns)
                    }
                    _ => None,
                },
                origin: schema.origin.clone(),
                columnar: ColumnarRef::of(trace),
                set: None,
            },
            kernels,
            copies,
            nvtx,
            inventory,
            expected_devices,
        })
    }
}
