//! `nccl-skew --stream auto`: each rank's own NCCL stream. On the 2-GPU capture every process
//! has its own NCCL stream (7 and 15), so one stream id matches nothing while `auto` matches
//! every instance; the numbers are checked against SQL and a pairing written here.

use crate::util;

use util::{fixture, open_ro};

fn skew(args: &[&str]) -> serde_json::Value {
    let path = fixture("nsys-ai/mfu_2gpu_before.sqlite");
    let out = assert_cmd::Command::cargo_bin("verdict")
        .unwrap()
        .args(["query", "nccl-skew", path.to_str().unwrap(), "--json"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn each_rank_uses_the_stream_that_carries_its_nccl_kernels() {
    let conn = open_ro(&fixture("nsys-ai/mfu_2gpu_before.sqlite"));
    // Per device, its NCCL kernels on its busiest NCCL stream, in start order.
    let mut per_device: Vec<Vec<(i64, i64)>> = Vec::new();
    let mut streams = Vec::new();
    for device in [0, 1] {
        let stream = util::reference::busiest_nccl_stream(&conn, device);
        streams.push(stream);
        per_device.push(util::reference::nccl_kernels(&conn, device, stream));
    }
    assert_eq!(streams, [7, 15]);
    let matched = per_device.iter().map(Vec::len).min().unwrap();
    let (mut nccl, mut wait) = (0i64, 0i64);
    for j in 0..matched {
        let d: Vec<i64> = per_device.iter().map(|r| r[j].1 - r[j].0).collect();
        let min = *d.iter().min().unwrap();
        nccl += d.iter().sum::<i64>();
        wait += d.iter().map(|x| x - min).sum::<i64>();
    }
    let v = skew(&["--stream", "auto"]);
    assert_eq!(v["values"]["matched"], matched as i64);
    assert_eq!(v["values"]["nccl_ns"], nccl);
    assert_eq!(v["values"]["wait_ns"], wait);
    assert_eq!(v["parameters"]["rank_streams"], serde_json::json!({"0": 7, "1": 15}));
    assert_eq!(v["scope"]["streams"], serde_json::json!([7, 15]));
    // One stream id for both ranks matches no instance, and says so by a null, not a 0.
    let v = skew(&["--stream", "7"]);
    assert_eq!(v["values"]["matched"], 0);
    assert!(v["values"]["wait_ns"].is_null());
}
