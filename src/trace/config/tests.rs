//! Unit tests of `trace::config`. Expected values are literals read from the fixtures with
//! `grep -n` (each cited beside it), never computed by the reader under test. Small inputs
//! written in a test are synthetic and say so.

use std::path::{Path, PathBuf};

use super::*;

const LOG: &str = "fixtures/config/megatron-deepspeed-moe-0.125B.log";
const YAML: &str = "fixtures/config/nemo-megatron_gpt_config.yaml";

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn num(text: &str) -> ConfigValue {
    ConfigValue::Number { value: Rational::parse_decimal(text).unwrap(), text: text.into() }
}

fn num_as(value: Rational, text: &str) -> ConfigValue {
    ConfigValue::Number { value, text: text.into() }
}

fn text(s: &str) -> ConfigValue {
    ConfigValue::Text(s.into())
}

/// Parses synthetic text under a file name (only the extension matters).
fn parse_as(name: &str, body: &str) -> Result<Config, ConfigError> {
    parse(body.as_bytes(), Path::new(name))
}

fn value<'a>(c: &'a Config, key: &str) -> &'a ConfigValue {
    &c.get(key).unwrap_or_else(|| panic!("no key `{key}`")).value
}

// --- the real Megatron log -------------------------------------------------------------------

#[test]
fn real_log_block_is_read_exactly() {
    let c = read(&fixture(LOG)).unwrap();
    assert_eq!(c.format, Format::MegatronLog);
    // `sha256sum` of the fixture (fixtures/README.md).
    assert_eq!(c.sha256, "4f38cafd0a77c21b144e002cbeee464148e886f55244878d0bbe05afb89e5a15");
    // `grep -n -e '-- arguments --' -e 'end of arguments'`: lines 106 and 305, one block.
    let b = c.block.as_ref().unwrap();
    assert_eq!((b.start_line, b.end_line, b.prefix.as_str(), b.blocks), (106, 305, "", 1));
    // `awk '/-- arguments --/{f=1;next} /end of arguments/{f=0} f' | wc -l`: 198 lines.
    assert_eq!(c.entries.len(), 198);
    // `grep -n -E '^  (tensor_model_parallel_size|micro_batch_size|lr|...) '`:
    let cases: [(&str, u64, ConfigValue); 8] = [
        ("tensor_model_parallel_size", 278, num("1")),
        ("micro_batch_size", 219, num("4")),
        ("lr", 204, num("0.0003")),
        ("adam_eps", 110, num_as(Rational::new(1, 100_000_000).unwrap(), "1e-08")),
        ("fp16", 165, ConfigValue::Bool(true)),
        ("checkpoint_activations", 125, ConfigValue::Bool(false)),
        ("lazy_mpu_init", 189, ConfigValue::Absent),
        (
            "data_path",
            140,
            ConfigValue::List(vec![text(
                "/blob/data/the_pile_public_merged_nopreprocessing/pile_text_document",
            )]),
        ),
    ];
    for (key, line, v) in cases {
        let e = c.get(key).unwrap();
        assert_eq!((e.line, &e.value), (line, &v), "{key}");
    }
    assert_eq!(
        c.get("lr").unwrap().raw,
        "  lr .............................................. 0.0003"
    );
    // This 2022 Megatron-DeepSpeed log predates `recompute_granularity`
    // (`grep -c recompute_granularity` is 0): the key is missing, not `None`.
    assert!(c.get("recompute_granularity").is_none());
    assert!(c.get("lazy_mpu_init").unwrap().value.is_absent());
}

/// The real log's lines with torchrun's prefixes, and a second rank's lines interleaved:
/// derived in the test from the fixture, not a real torchrun log.
#[test]
fn torchrun_prefixes_are_stripped_and_other_ranks_skipped() {
    let real = std::fs::read_to_string(fixture(LOG)).unwrap();
    let mut body = String::new();
    for (i, line) in real.lines().enumerate() {
        body.push_str(&format!("[default0]:{line}\n"));
        if i % 50 == 0 {
            body.push_str("[default3]:some other rank's output\n");
        }
    }
    let c = parse_as("train.log", &body).unwrap();
    let b = c.block.as_ref().unwrap();
    assert_eq!((b.prefix.as_str(), b.start_line), ("[default0]:", 106 + 106 / 50 + 1));
    assert_eq!(c.entries.len(), 198);
    assert_eq!(value(&c, "micro_batch_size"), &num("4"));
    assert_eq!(
        c.get("fp16").unwrap().raw,
        "  fp16 ............................................ True"
    );
}

// --- the odd lines (synthetic) -------------------------------------------------------------

/// Synthetic block in Megatron's layout (`'  {} {} {}'.format(arg, '.' * (48 - len(arg)), v)`).
const ODD: &str = "\
noise before
------------------------ arguments ------------------------
  a_key_that_is_far_too_long_for_the_dots_of_megatron  7
  key_of_forty_seven_characters_exactly_xxxxxxxxx . 8
  data_cache_path .................................\x20
  recompute_granularity ........................... None
  recompute_method ................................ uniform
  split ........................................... ['a', 'b']
  betas ........................................... [0.9, 0.95]
  nested .......................................... [[1, 2], [3]]
  tuple ........................................... (0.9, 0.95)
  dtype ........................................... torch.bfloat16
  load ............................................ ../ckpt
  small ........................................... 1.5e-05
  neg ............................................. -3
-------------------- end of arguments ---------------------
iteration 1
";

#[test]
fn odd_block_lines_are_read() {
    let c = parse_as("odd.txt", ODD).unwrap();
    assert_eq!(c.entries.len(), 13);
    assert_eq!(value(&c, "a_key_that_is_far_too_long_for_the_dots_of_megatron"), &num("7"));
    assert_eq!(c.get("a_key_that_is_far_too_long_for_the_dots_of_megatron").unwrap().line, 3);
    assert_eq!(value(&c, "key_of_forty_seven_characters_exactly_xxxxxxxxx"), &num("8"));
    assert_eq!(value(&c, "data_cache_path"), &text(""));
    assert_eq!(value(&c, "recompute_granularity"), &ConfigValue::Absent);
    assert!(value(&c, "recompute_granularity").is_absent());
    assert_eq!(value(&c, "recompute_method"), &text("uniform"));
    assert_eq!(value(&c, "split"), &ConfigValue::List(vec![text("a"), text("b")]));
    assert_eq!(value(&c, "betas"), &ConfigValue::List(vec![num("0.9"), num("0.95")]));
    assert_eq!(value(&c, "nested"), &text("[[1, 2], [3]]"));
    assert_eq!(value(&c, "tuple"), &text("(0.9, 0.95)"));
    assert_eq!(value(&c, "dtype"), &text("torch.bfloat16"));
    assert_eq!(value(&c, "load"), &text("../ckpt"));
    assert_eq!(value(&c, "small"), &num_as(Rational::new(3, 200_000).unwrap(), "1.5e-05"));
    assert_eq!(value(&c, "neg"), &num("-3"));
}

#[test]
fn the_block_decides_over_the_extension() {
    let c = parse_as("run.yaml", ODD).unwrap();
    assert_eq!(c.format, Format::MegatronLog);
}

#[test]
fn repeated_blocks_must_agree() {
    let twice = format!("{ODD}{ODD}");
    let c = parse_as("a.log", &twice).unwrap();
    assert_eq!(c.block.unwrap().blocks, 2);
    let changed = twice.replacen("uniform", "block", 2).replacen("block", "uniform", 1);
    let e = parse_as("a.log", &changed).unwrap_err();
    assert_eq!(e.line, Some(17 + 7));
    assert!(e.to_string().contains("`recompute_method`: `uniform` there, `block` here"), "{e}");
    assert!(e.hint().unwrap().contains("several runs"));
}

// --- bad input (synthetic) -----------------------------------------------------------------

fn assert_error(name: &str, body: &[u8], line: Option<u64>, message: &str) {
    let e = parse(body, Path::new(name)).unwrap_err();
    assert_eq!(e.line, line, "{e}");
    let shown = e.to_string();
    assert!(shown.starts_with(&format!("`{name}")), "{shown}");
    assert!(shown.contains(message), "{shown}");
    assert!(!e.hint().unwrap().is_empty());
}

#[test]
fn bad_input_names_file_line_and_hint() {
    assert_error("empty.log", b"", None, "the file is empty");
    assert_error("blank.log", b" \n\n", None, "the file is empty");
    assert_error("notes.txt", b"just some words\n", None, "not a training configuration");
    assert_error("bad.log", b"ok\n\xff\xfe\n", Some(2), "not UTF-8");
    let cut = "x\n------------------------ arguments ------------------------\n  lr ..... 0.1\n";
    assert_error("cut.log", cut.as_bytes(), Some(2), "no `end of arguments`");
    let foreign = ODD.replace("  neg ....", "WARNING: something\n  neg ....");
    assert_error("f.log", foreign.as_bytes(), Some(15), "no argument name (`WARNING: something`)");
    let dup = ODD.replace("  neg ....", "  lr ... 1\n  lr ... 2\n  neg ....");
    assert_error("d.log", dup.as_bytes(), Some(16), "key `lr` is given twice (first on line 15)");
}

#[test]
fn read_names_a_missing_file() {
    let e = read(Path::new("/nonexistent/x.yaml")).unwrap_err();
    assert!(matches!(*e.kind, ConfigErrorKind::Text(TextError::Read(_))));
    assert!(e.hint().is_some());
}

// --- the real NeMo YAML --------------------------------------------------------------------

#[test]
fn real_yaml_is_flattened_with_lines() {
    let c = read(&fixture(YAML)).unwrap();
    assert_eq!(c.format, Format::Yaml);
    // `sha256sum` of the fixture (fixtures/README.md).
    assert_eq!(c.sha256, "e359a4a7e3a8c79731f51bc917f5310db9bf47b0ade7e7c8baad39c84a248afb");
    // `grep -n` of each key in the fixture:
    let cases: [(&str, u64, ConfigValue); 9] = [
        ("restore_from_path", 2, ConfigValue::Absent),
        ("trainer.precision", 8, num("16")),
        ("model.micro_batch_size", 45, num("4")),
        ("model.tensor_model_parallel_size", 47, num("1")),
        ("model.layernorm_epsilon", 62, num_as(Rational::new(1, 100_000).unwrap(), "1e-5")),
        ("model.activations_checkpoint_method", 94, ConfigValue::Absent),
        ("model.data.data_prefix", 106, ConfigValue::Unresolved("???".into())),
        ("model.optim.lr", 120, num_as(Rational::new(1, 5_000).unwrap(), "2e-4")),
        ("model.optim.betas", 122, ConfigValue::List(vec![num("0.9"), num("0.98")])),
    ];
    for (key, line, v) in cases {
        let e = c.get(key).unwrap_or_else(|| panic!("no `{key}`"));
        assert_eq!((e.line, &e.value), (line, &v), "{key}");
    }
    // Line 39: an OmegaConf interpolation is left to be resolved, never read as text.
    let e = c.get("exp_manager.checkpoint_callback_params.model_parallel_size").unwrap();
    assert_eq!(e.line, 39);
    assert!(e.value.is_absent());
    // Line 47 `  tensor_model_parallel_size: 1 # ...`: the value's column and text.
    let e = c.get("model.tensor_model_parallel_size").unwrap();
    assert_eq!((e.column, e.raw.as_str()), (Some(31), "1"));
}

#[test]
fn yaml_duplicates_are_refused_with_both_lines() {
    let body = "model:\n  tp: 1\n  pp: 2\n  tp: 8\n";
    assert_error(
        "d.yaml",
        body.as_bytes(),
        Some(4),
        "key `model.tp` is given twice (first on line 2)",
    );
    let spelled_twice = "model.tp: 1\nmodel:\n  tp: 8\n";
    assert_error(
        "d.yml",
        spelled_twice.as_bytes(),
        Some(3),
        "key `model.tp` is given twice (first on line 1)",
    );
}

#[test]
fn yaml_small_cases() {
    let c = parse_as("s.yaml", "a: ~\nb: {}\nc: [{n: 1}, {n: 2}]\nd: 'x'\ne: true\n").unwrap();
    assert_eq!(value(&c, "a"), &ConfigValue::Absent);
    assert_eq!(value(&c, "b"), &ConfigValue::EmptyMap);
    assert_eq!((value(&c, "c.1.n"), c.get("c.1.n").unwrap().line), (&num("2"), 3));
    assert_eq!(value(&c, "d"), &text("x"));
    assert_eq!(value(&c, "e"), &ConfigValue::Bool(true));
    // serde-saphyr places an unclosed bracket at its opening (`1:4`).
    assert_error("bad.yaml", b"a: [1, 2\n", Some(1), "invalid YAML (unclosed bracket '[')");
    assert_error("list.yaml", b"- 1\n- 2\n", Some(1), "not a mapping");
}

// --- JSON and TOML (synthetic) -------------------------------------------------------------

#[test]
fn json_is_told_by_content_and_flattened() {
    let body = "{\n  \"model\": {\n    \"tp\": 8,\n    \"lr\": 3e-4,\n    \"recompute\": null,\n    \"name\": \"gpt\",\n    \"betas\": [0.9, 0.95]\n  },\n  \"fp8\": false\n}\n";
    let c = parse_as("run.cfg", body).unwrap();
    assert_eq!(c.format, Format::Json);
    let e = c.get("model.tp").unwrap();
    assert_eq!((e.line, e.column, &e.value, e.raw.as_str()), (3, Some(11), &num("8"), "8"));
    assert_eq!(value(&c, "model.lr"), &num_as(Rational::new(3, 10_000).unwrap(), "3e-4"));
    assert_eq!(value(&c, "model.recompute"), &ConfigValue::Absent);
    assert_eq!(value(&c, "model.name"), &text("gpt"));
    assert_eq!(value(&c, "model.betas"), &ConfigValue::List(vec![num("0.9"), num("0.95")]));
    assert_eq!((value(&c, "fp8"), c.get("fp8").unwrap().line), (&ConfigValue::Bool(false), 9));
}

#[test]
fn json_duplicates_and_syntax_are_refused() {
    let body = "{\n  \"tp\": 1,\n  \"pp\": 2,\n  \"tp\": 8\n}\n";
    assert_error("d.json", body.as_bytes(), Some(4), "key `tp` is given twice (first on line 2)");
    assert_error("s.json", b"{\n  \"tp\": 1,\n}\n", Some(3), "invalid JSON");
    assert_error("a.json", b"[1, 2]\n", Some(1), "not a mapping");
}

#[test]
fn toml_is_flattened() {
    let body = "[model]\ntp = 8\nlr = 1.5e-4\nname = \"gpt\"\nsizes = [1, 2]\n\n[[callbacks]]\nname = \"a\"\n";
    let c = parse_as("r.toml", body).unwrap();
    assert_eq!(c.format, Format::Toml);
    assert_eq!((value(&c, "model.tp"), c.get("model.tp").unwrap().line), (&num("8"), 2));
    assert_eq!(value(&c, "model.lr"), &num_as(Rational::new(3, 20_000).unwrap(), "1.5e-4"));
    assert_eq!(value(&c, "model.name"), &text("gpt"));
    assert_eq!(value(&c, "model.sizes"), &ConfigValue::List(vec![num("1"), num("2")]));
    assert_eq!(
        (value(&c, "callbacks.0.name"), c.get("callbacks.0.name").unwrap().line),
        (&text("a"), 8)
    );
    // TOML itself forbids a repeated key; its parser names the second.
    assert_error("d.toml", b"tp = 1\npp = 2\ntp = 8\n", Some(3), "invalid TOML");
}

// --- the launch command line (synthetic) ---------------------------------------------------

#[test]
fn command_line_flags_become_keys() {
    let body = "\
#!/bin/bash
export CUDA_DEVICE_MAX_CONNECTIONS=1
torchrun --nproc_per_node 8 --nnodes=1 \\
    pretrain_gpt.py \\
    --tensor-model-parallel-size 8 \\
    --recompute-activations \\
    --lr 1.5e-4 --data-path 0.5 a 0.5 b \\
    --pipeline-model-parallel-size $PP \\
    --save \"/ckpt dir\" # a comment --not-a-flag
    2>&1 | tee log.txt
";
    let c = parse_as("launch.sh", body).unwrap();
    assert_eq!(c.format, Format::CommandLine);
    assert_eq!(
        (value(&c, "launcher.nproc_per_node"), c.get("launcher.nproc_per_node").unwrap().line),
        (&num("8"), 3)
    );
    assert_eq!(value(&c, "launcher.nnodes"), &num("1"));
    let e = c.get("tensor_model_parallel_size").unwrap();
    assert_eq!(
        (e.line, &e.value, e.raw.as_str()),
        (5, &num("8"), "--tensor-model-parallel-size 8")
    );
    assert_eq!(
        (value(&c, "recompute_activations"), c.get("recompute_activations").unwrap().line),
        (&ConfigValue::Bool(true), 6)
    );
    assert_eq!(value(&c, "lr"), &num_as(Rational::new(3, 20_000).unwrap(), "1.5e-4"));
    assert_eq!(
        value(&c, "data_path"),
        &ConfigValue::List(vec![num("0.5"), text("a"), num("0.5"), text("b")])
    );
    assert_eq!(value(&c, "pipeline_model_parallel_size"), &ConfigValue::Unresolved("$PP".into()));
    assert_eq!(value(&c, "save"), &text("/ckpt dir"));
    assert!(c.get("not_a_flag").is_none());
    assert_eq!(c.entries.len(), 8);
}

#[test]
fn command_line_duplicates_are_refused() {
    let body = "python pretrain_gpt.py --lr 1 \\\n  --micro-batch-size 2 \\\n  --lr 2\n";
    assert_error("l.sh", body.as_bytes(), Some(3), "key `lr` is given twice (first on line 1)");
}

#[test]
fn exact_numbers() {
    assert_eq!(exact_number("1e-08"), Rational::new(1, 100_000_000));
    assert_eq!(exact_number("-2.5E+3"), Some(Rational::int(-2500)));
    assert_eq!(exact_number(".01"), Rational::new(1, 100));
    for bad in ["inf", "nan", "1,000", "0x10", "", "-", "1e", "1.2.3", "e5"] {
        assert_eq!(exact_number(bad), None, "{bad}");
    }
}
