//! The blog profile of the day26 example against the article it stands for (the published
//! Day 26 post, read from `../shared/reference/` when it is there): every paragraph type of the article's
//! mapping table in docs/claims.md is there, no claim or part id is shown, no half-width
//! punctuation touches Chinese, the share of Chinese characters is at least the article's,
//! and every image link of every profile points to a file the run wrote, with typst and
//! without it.

use crate::util;

use std::collections::BTreeSet;
use std::path::Path;

use util::typst::typst_ready;

const CLAIMS: &str = "claims/day26-profile-blind.yaml";
const ID: &str = "day26-profile-blind";
/// The article, beside the crate when present; it is not committed (not ours to license).
const ARTICLE: &str = "../shared/reference/day26-audit.zh-TW.txt";
/// Han characters and all non-space characters of the article, counted by `cjk_share` below
/// on its text (3,037 of 6,037: 50.3%); checked again whenever the article is there.
const ARTICLE_COUNTS: (usize, usize) = (3_037, 6_037);

/// Renders the three profiles in every default format into `dir`; `typst` false points
/// `TYPST_BIN` at a program that does not exist.
fn render(dir: &Path, typst: bool) {
    let mut cmd = util::verdict();
    cmd.current_dir(util::manifest_dir())
        .env("SOURCE_DATE_EPOCH", "1788393600")
        .args(["render", CLAIMS, "--profile", "full,blog,brief", "--out"])
        .arg(dir);
    if !typst {
        cmd.env("TYPST_BIN", "/nonexistent/typst");
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn blog(lang: &str) -> String {
    blog_of(CLAIMS, lang)
}

/// The blog of a claims file of the project, in one language.
fn blog_of(claims: &str, lang: &str) -> String {
    let (dir, id) = render_blog(claims);
    std::fs::read_to_string(dir.path().join(format!("{id}.{lang}.blog.md"))).unwrap()
}

/// Renders the posts (Markdown) of a claims file of the project into a fresh folder; returns
/// it with the report's id.
fn render_blog(claims: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let o = util::verdict()
        .current_dir(util::manifest_dir())
        .args(["render", claims, "--profile", "blog", "--format", "md", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let set = verdict::claims::load(&util::manifest_dir().join(claims)).unwrap();
    (dir, set.report.id)
}

/// The examples without a narrative: their blogs fall back on what the audit says.
const PLAIN: [&str; 9] = [
    "claims/h100-2gpu-no-nccl.yaml",
    "claims/mfu-2gpu-ab.yaml",
    "claims/tp-ab.yaml",
    "claims/day26-op-attribution.yaml",
    "claims/dsl-fs24-ring.yaml",
    "claims/dsl-fs24-tree.yaml",
    "claims/tp-runs-ab.yaml",
    "claims/kineto-ddp-overlap.yaml",
    "claims/mfu-2gpu-same-stream.yaml",
];

/// A Han character (the unified ideographs, extension A and the compatibility block).
fn han(c: char) -> bool {
    matches!(c, '\u{4e00}'..='\u{9fff}' | '\u{3400}'..='\u{4dbf}' | '\u{f900}'..='\u{faff}')
}

/// Han characters over all characters that are not white space.
fn cjk_share(s: &str) -> (usize, usize) {
    let all: Vec<char> = s.chars().filter(|c| !c.is_whitespace()).collect();
    (all.iter().filter(|c| han(**c)).count(), all.len())
}

/// The text a reader reads as prose: fenced blocks, code spans and link targets taken out.
fn prose(md: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (n, line) in md.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Code spans: from a run of backticks to the same run.
        let mut text = String::new();
        let mut rest = line;
        while let Some(i) = rest.find('`') {
            text.push_str(&rest[..i]);
            let run = rest[i..].chars().take_while(|c| *c == '`').count();
            let after = &rest[i + run..];
            match after.find(&"`".repeat(run)) {
                Some(j) => rest = &after[j + run..],
                None => {
                    rest = after;
                    break;
                }
            }
        }
        text.push_str(rest);
        // Link and image targets.
        while let Some(i) = text.find("](") {
            let end = text[i..].find(')').map_or(text.len(), |j| i + j + 1);
            text.replace_range(i + 1..end, "");
        }
        out.push((n + 1, text));
    }
    out
}

#[test]
fn the_zh_tw_blog_has_no_half_width_punctuation_next_to_chinese() {
    for claims in std::iter::once(CLAIMS).chain(PLAIN) {
        half_width_next_to_chinese(claims);
    }
}

fn half_width_next_to_chinese(claims: &str) {
    let md = blog_of(claims, "zh-TW");
    let mut found = Vec::new();
    for (n, line) in prose(&md) {
        let chars: Vec<char> = line.chars().collect();
        for w in chars.windows(2) {
            let half = |c: char| ",.:;!?()".contains(c);
            if (han(w[0]) && half(w[1])) || (half(w[0]) && han(w[1])) {
                found.push(format!("line {n}: `{}{}` in {line}", w[0], w[1]));
            }
        }
    }
    assert!(found.is_empty(), "{claims}: {found:#?}");
}

#[test]
fn no_claim_or_part_id_is_shown_to_a_blog_reader() {
    for claims in std::iter::once(CLAIMS).chain(PLAIN) {
        no_ids(claims);
    }
}

/// Whether `id` stands in `md` as a word of its own (not inside a longer name or path).
fn as_word(md: &str, id: &str) -> bool {
    let boundary =
        |c: Option<char>| c.is_none_or(|c| !(c.is_ascii_alphanumeric() || "-_".contains(c)));
    md.match_indices(id).any(|(i, _)| {
        boundary(md[..i].chars().next_back()) && boundary(md[i + id.len()..].chars().next())
    })
}

fn no_ids(claims: &str) {
    let set = verdict::claims::load(&util::manifest_dir().join(claims)).unwrap();
    for lang in ["zh-TW", "en"] {
        let md = blog_of(claims, lang);
        let mut shown = Vec::new();
        // A scope is told by its trace's label and devices, never by its id (`after-d0`).
        for id in set.scopes.keys().filter(|id| id.contains('-')) {
            if as_word(&md, id) {
                shown.push(id.clone());
            }
        }
        for c in &set.claims {
            let mut ids = vec![c.id.clone()];
            for p in &c.parts {
                ids.push(p.id.clone());
                // `claim/part`, the form of the audit's own cross-references.
                if md.contains(&format!("{}/{}", c.id, p.id)) {
                    shown.push(format!("{}/{}", c.id, p.id));
                }
            }
            for id in ids {
                // As a code span or a bold lead, in any case.
                if md.contains(&format!("`{id}`")) || md.contains(&format!("**{id}**")) {
                    shown.push(id.clone());
                }
                // An id with a hyphen is no English word: not even as plain text.
                if id.contains('-') && as_word(&md, &id) {
                    shown.push(id.clone());
                }
            }
        }
        assert!(shown.is_empty(), "{claims} ({lang}): ids shown to a blog reader: {shown:?}");
        // Nor the files' paths: a trace is named by its label, its file in the audit.
        for t in &set.traces {
            assert!(!md.contains(&t.path), "{claims} ({lang}): `{}` in the post", t.path);
        }
        // Nor a trace file by the path the audit read it at (`fixtures/…/x.sqlite`).
        let trace_file = md.split_whitespace().find(|w| {
            w.contains("fixtures/")
                && [".sqlite", ".json", ".gz", ".sqlite)", ".sqlite）"]
                    .iter()
                    .any(|e| w.contains(e))
        });
        assert!(trace_file.is_none(), "{claims} ({lang}): {trace_file:?} in the post");
    }
}

#[test]
fn the_zh_tw_blog_is_at_least_as_chinese_as_the_article() {
    let (a_han, a_all) = match std::fs::read_to_string(util::manifest_dir().join(ARTICLE)) {
        Ok(article) => {
            let counted = cjk_share(&article);
            assert_eq!(counted, ARTICLE_COUNTS, "the article's counts");
            counted
        }
        Err(_) => {
            eprintln!("{ARTICLE} is not there: its counts as recorded");
            ARTICLE_COUNTS
        }
    };
    let md = blog("zh-TW");
    // The whole Markdown, tables, links and code included; a link's address is left out, as
    // the article's text, which names its references without their addresses, has none.
    let md: String = md
        .split("](<")
        .enumerate()
        .map(
            |(i, piece)| if i == 0 { piece } else { piece.split_once(">)").map_or(piece, |x| x.1) },
        )
        .collect::<Vec<_>>()
        .join("](");
    let (b_han, b_all) = cjk_share(&md);
    assert!(
        b_han * a_all >= a_han * b_all,
        "blog {b_han}/{b_all} = {:.3} < article {a_han}/{a_all} = {:.3}",
        b_han as f64 / b_all as f64,
        a_han as f64 / a_all as f64
    );
    // And it is no shorter than the article in Chinese characters.
    assert!(b_han >= a_han, "blog {b_han} Chinese characters, article {a_han}");
}

/// The slots of the mapping table in docs/claims.md ("The narrative of a post"): the second
/// column's code span of each row.
fn documented_slots() -> Vec<String> {
    let doc = std::fs::read_to_string(util::manifest_dir().join("docs/claims.md")).unwrap();
    let start = doc.find("| Article paragraph |").expect("the mapping table");
    doc[start..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cell = l.split('|').nth(2).unwrap().trim();
            cell.trim_matches('`').to_string()
        })
        .collect()
}

/// Words of an author's first paragraph as the blog shows them: the start of its longest
/// stretch without a placeholder, 24 characters at most.
fn lead(text: &str) -> String {
    let first = text.split("\n\n").next().unwrap().trim();
    let stretch = first
        .split('{')
        .map(|s| s.split_once('}').map_or(s, |(_, after)| after))
        .max_by_key(|s| s.chars().count())
        .unwrap();
    stretch.trim().chars().take(24).collect::<String>().trim().to_string()
}

#[test]
#[expect(clippy::too_many_lines, reason = "predates the 150-line limit; to be cut along its seams")]
fn the_zh_tw_blog_holds_every_paragraph_type_of_the_article() {
    let set = verdict::claims::load(&util::manifest_dir().join(CLAIMS)).unwrap();
    let n = set.narrative.expect("the example has a narrative");
    let md = blog("zh-TW");
    let plain = md.replace('\\', "");
    let zh = |t: &Option<verdict::claims::Text>| t.as_ref().unwrap()["zh-TW"].clone();
    let has = |what: &str, text: &str| {
        assert!(!text.is_empty(), "{what}: nothing to look for");
        assert!(plain.contains(text), "{what}: `{text}` is not in the blog");
    };
    let lines = |prefix: &str| md.lines().filter(|l| l.starts_with(prefix)).count();
    let slots = documented_slots();
    let known: BTreeSet<&str> = [
        "narrative.opening",
        "narrative.conditions",
        "narrative.prompt",
        "narrative.naming",
        "narrative.design",
        "narrative.experiment",
        "narrative.behaviour",
        "narrative.claims.said",
        "narrative.candidates",
        "narrative.kinds_lead",
        "kinds",
        "narrative.kinds",
        "scopes",
        "verdicts",
        "narrative.claims.reading",
        "narrative.claims.before",
        "narrative.denominators",
        "narrative.bound",
        "narrative.gates",
        "gates",
        "narrative.gates_note",
        "narrative.misreadings",
        "narrative.closing",
        "narrative.next",
        "narrative.references",
    ]
    .into();
    let documented: BTreeSet<&str> = slots.iter().map(String::as_str).collect();
    assert_eq!(documented, known, "the mapping table and this test name the same slots");
    for slot in &slots {
        match slot.as_str() {
            "narrative.opening" => has(slot, &lead(&zh(&n.opening))),
            "narrative.conditions" => {
                let c = n.conditions.as_ref().unwrap();
                // The article's conditions, and the scope the evidence covers.
                for s in [
                    "OpenAI Codex v0.154.0",
                    "gpt-6-astra",
                    "reasoning effort 設為 max",
                    "2026-09-11 單次執行",
                    "nsys-ai v0.3.0-21-g1cc03b5",
                    "單卡數字固定在 39.964–46.123 秒、device 4",
                    "device 1–7",
                ] {
                    has(slot, s);
                }
                has(slot, &lead(&zh(&c.unseen)));
                has(slot, &lead(&zh(&c.note)));
            }
            "narrative.prompt" => {
                // Verbatim, as a quotation.
                let p = zh(&n.prompt);
                let quoted: String =
                    md.lines().filter_map(|l| l.strip_prefix("> ")).collect::<Vec<_>>().join("\n");
                assert_eq!(quoted.replace('\\', ""), p.trim(), "the prompt, verbatim");
            }
            "narrative.naming" => has(slot, &lead(&zh(&n.naming))),
            "narrative.design" => has(slot, &lead(&zh(&n.design))),
            "narrative.experiment" => has(slot, &lead(&zh(&n.experiment))),
            "narrative.behaviour" => {
                for p in zh(&n.behaviour).split("\n\n") {
                    has(slot, &lead(p));
                }
            }
            "narrative.claims.said" => {
                assert_eq!(n.claims.len(), 5);
                for c in &n.claims {
                    has(slot, &format!("「{}」", zh(&c.said)));
                }
                // One numbered item per claim.
                assert_eq!((1..=5).filter(|i| lines(&format!("{i}. **")) == 1).count(), 5);
            }
            "narrative.candidates" => has(slot, &lead(&zh(&n.candidates))),
            "narrative.kinds_lead" => has(slot, &lead(&zh(&n.kinds_lead))),
            "kinds" => {
                // The article's four content kinds, one item each.
                for k in ["觀察", "解釋", "因果主張", "建議動作"] {
                    assert_eq!(lines(&format!("- **{k}**：")), 1, "{k}");
                }
            }
            "narrative.kinds" => has(slot, &lead(&zh(&n.kinds))),
            "scopes" => {
                has(slot, "device 4、時間窗 39.964–46.123 秒");
                has(slot, "device 1–7 共 7 張卡合計、時間窗 39.964–46.123 秒");
                has(slot, "device 1–7 共 7 張卡合計、stream 56、整份 trace");
            }
            "verdicts" => {
                // The article's verdicts, each item led by its verdict: a list, which a phone
                // does not squeeze to one character per line as it does a table column.
                let words = ["支持", "部分支持", "無法驗證", "不支持"];
                let rows: Vec<&str> = md
                    .lines()
                    .filter_map(|l| l.strip_prefix("- **")?.split_once("**："))
                    .map(|(v, _)| v)
                    .filter(|v| words.contains(v))
                    .collect();
                assert_eq!(rows, ["支持", "部分支持", "無法驗證", "無法驗證", "部分支持"]);
                for v in ["17.8%", "140", "28.3%"] {
                    has(slot, v);
                }
            }
            "narrative.claims.reading" => {
                for c in &n.claims {
                    has(slot, &lead(&zh(&c.reading)));
                }
                // The article's sentence, its number from the audit.
                has(slot, "28.3% 不是過半");
                has(slot, "「開始分散、結束接近」");
            }
            "narrative.claims.before" => {
                for c in &n.claims {
                    has(slot, &format!("原本的「{}」，", zh(&c.before)));
                }
                has(slot, "現在變成 device 4 上 17.8% 的 exposed NCCL");
                has(slot, "有 39.3% 已經被運算蓋住");
            }
            "narrative.denominators" => {
                let d = n.denominators.as_ref().unwrap();
                has(slot, "## 為什麼 17.8% 和 39.3% 都對");
                has(slot, &lead(&zh(&d.lead)));
                // The article's identity and fractions, in a text block.
                for s in [
                    "```text",
                    "= 4,260.44 + 1,094.74 + 709.19 + 91.38",
                    "= 6,155.75 ms",
                    "= 1,094.74 / 6,155.75 ms",
                    "= 709.19 / (1,094.74 + 709.19) ms",
                ] {
                    has(slot, s);
                }
                has(slot, "17.8% 問的是");
            }
            "narrative.bound" => {
                has(slot, &lead(&zh(&n.bound)));
                has(slot, "吞吐最多快 1.216×");
            }
            "narrative.gates" => {
                for p in zh(&n.gates).split("\n\n") {
                    has(slot, &lead(p));
                }
            }
            "gates" => {
                for g in 1..=6 {
                    assert_eq!(lines(&format!("- **R{g} ")), 1, "R{g}");
                }
            }
            "narrative.gates_note" => {
                for p in zh(&n.gates_note).split("\n\n") {
                    has(slot, &lead(p));
                }
            }
            "narrative.misreadings" => {
                // The author's three, in place of the generated list.
                assert_eq!(n.misreadings.len(), 3);
                for m in &n.misreadings {
                    has(slot, &format!("**{}**：", m.title["zh-TW"]));
                    has(slot, &lead(&m.text["zh-TW"]));
                }
                let section = &md[md.find("## 常見誤讀").unwrap()..md.find("## 小結").unwrap()];
                assert_eq!(section.matches("\n**").count(), 3, "{section}");
            }
            "narrative.closing" => {
                for p in zh(&n.closing).split("\n\n") {
                    has(slot, &lead(p));
                }
                // A closing, not the tally again.
                let closing = &md[md.find("## 小結").unwrap()..];
                assert!(!closing.contains("支持 1、"), "{closing}");
            }
            "narrative.next" => has(slot, &lead(&zh(&n.next))),
            "narrative.references" => {
                for r in &n.references {
                    has(slot, &r.text["zh-TW"]);
                    has(slot, &r.url);
                }
            }
            other => panic!("no check for slot `{other}`"),
        }
    }
    // Taiwan forms in running text.
    for bad in ["1.216x", "device 1-7", " s）", "stream：all"] {
        assert!(!md.contains(bad), "`{bad}` in the blog");
    }
}

/// Image links of a Markdown report: the targets of `![alt](target)`, with their alt text.
fn md_images(md: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = md;
    while let Some(i) = rest.find("![") {
        let after = &rest[i + 2..];
        let Some(close) = after.find("](") else { break };
        let alt = after[..close].to_string();
        let target_end = after[close + 2..].find(')').unwrap();
        out.push((alt, after[close + 2..close + 2 + target_end].to_string()));
        rest = &after[close + 2 + target_end..];
    }
    out
}

/// Image files a Typst source embeds: `image("file", …)`.
fn typ_images(typ: &str) -> Vec<String> {
    typ.match_indices("image(\"")
        .map(|(i, m)| {
            let rest = &typ[i + m.len()..];
            rest[..rest.find('"').unwrap()].to_string()
        })
        .collect()
}

/// Every image of every profile and format points to a file of the run, and the blog links
/// a chart only as a PNG that is there; without one, it says where the chart is.
fn check_images(dir: &Path, pngs: bool) {
    let written: BTreeSet<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(written.iter().any(|f| f.ends_with(".png")), pngs, "{written:?}");
    let mut links = 0;
    for lang in ["zh-TW", "en"] {
        for stem in
            [format!("{ID}.{lang}"), format!("{ID}.{lang}.blog"), format!("{ID}.{lang}.brief")]
        {
            let md = std::fs::read_to_string(dir.join(format!("{stem}.md"))).unwrap();
            for (alt, target) in md_images(&md) {
                assert!(written.contains(&target), "{stem}.md links `{target}`, not written");
                assert!(!alt.trim().is_empty(), "{stem}.md: an image without alt text");
                links += 1;
                if stem.ends_with(".blog") {
                    assert!(target.ends_with(".png"), "{stem}.md links {target}");
                    // On a phone the chart is a third of its size: a tap opens it whole.
                    let linked = format!("[![{alt}]({target})]({target})");
                    assert!(md.contains(&linked), "{stem}.md: {target} not linked to itself");
                    // Alt text says what the chart shows, not just "chart".
                    assert!(alt.chars().count() > 12, "{stem}.md: alt text `{alt}`");
                }
            }
            let typ = std::fs::read_to_string(dir.join(format!("{stem}.typ"))).unwrap();
            for target in typ_images(&typ) {
                assert!(written.contains(&target), "{stem}.typ embeds `{target}`, not written");
                links += 1;
            }
            if stem.ends_with(".blog") {
                let figures = md
                    .lines()
                    .filter(|l| l.starts_with(if lang == "en" { "Figure " } else { "圖 " }))
                    .count();
                assert_eq!(figures, 3, "{stem}.md: one upright caption per chart");
                assert_eq!(md_images(&md).len(), if pngs { 3 } else { 0 }, "{stem}.md");
                if !pngs {
                    let svg = format!("`{ID}.{lang}.overlap.svg`");
                    assert!(md.contains(&svg), "{stem}.md does not say where the chart is");
                }
            }
        }
    }
    assert!(links > 0);
}

#[test]
fn every_image_link_of_every_profile_points_to_a_file_the_run_wrote_without_typst() {
    let dir = tempfile::tempdir().unwrap();
    render(dir.path(), false);
    check_images(dir.path(), false);
}

#[test]
fn every_image_link_of_every_profile_points_to_a_file_the_run_wrote_with_typst() {
    if !typst_ready("the image links with PNG charts") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    render(dir.path(), true);
    check_images(dir.path(), true);
}

/// A narrative's faults are reported where they are, each with a hint, and nothing is
/// rendered: a claim that does not exist, a date that is not one, a formula without a
/// number, a text missing a language, a placeholder that is not closed.
#[test]
fn narrative_faults_are_located_with_a_hint_and_exit_2() {
    let src = std::fs::read_to_string(util::manifest_dir().join(CLAIMS)).unwrap();
    let trace = util::fixture("day26/megatron.sqlite");
    let bad = src
        .replace("../fixtures/day26/megatron.sqlite", util::s(&trace))
        .replace("    - claim: tp8-gemm\n", "    - claim: tp8-gem\n")
        .replace("    date: \"2026-09-11\"", "    date: \"2026-9-11\"")
        .replace("      - part: exposed-comm/share\n", "      - part: flash-attention/check-settings\n")
        .replace(
            "      en: \"This is one case checked, not a model leaderboard, and nothing here generalises to AI agents at large.\"\n",
            "",
        )
        .replace("是 30 ÷ 130 ≈ {recompute/arithmetic:value}，", "是 30 ÷ 130 ≈ {recompute/arithmetic:value，")
        .replace(
            "      url: \"https://github.com/facebookresearch/HolisticTraceAnalysis\"",
            "      url: \"github.com/facebookresearch/HolisticTraceAnalysis\"",
        )
        .replace("{exposed-comm/share:spread}", "{exposed-comm/share:change}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.yaml");
    std::fs::write(&file, &bad).unwrap();
    // Where each fault is, found in the text: (line, column of the value, words of the message).
    let at = |needle: &str, value: &str| -> (usize, usize) {
        let (n, line) = bad
            .lines()
            .enumerate()
            .find(|(_, l)| l.trim_start().starts_with(needle.trim_start()) && l.contains(needle))
            .expect(needle);
        (n + 1, line.find(value).unwrap() + 1)
    };
    let expected = [
        (at("- claim: tp8-gem", "tp8-gem"), "no claim `tp8-gem`", "did you mean `tp8-gemm`?"),
        (at("date: \"2026-9-11\"", "\"2026"), "`2026-9-11` is not a date", "YYYY-MM-DD"),
        (
            at("- part: flash-attention/check-settings", "flash-attention"),
            "`flash-attention/check-settings` has no number to show",
            "`measure`",
        ),
        (
            // A mapping's place is its first key.
            at("      zh-TW: \"這是一次個案檢查", "zh-TW"),
            "`narrative.conditions.note` has no `en` text",
            "every language",
        ),
        (
            at("      url: \"github.com/", "\"github"),
            "`narrative.references[3].url`: `github.com/facebookresearch/HolisticTraceAnalysis` is not a web address",
            "`https://`",
        ),
    ];
    let out = util::verdict().args(["check"]).arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    for ((line, col), message, hint) in expected {
        let prefix = format!("bad.yaml:{line}:{col}: ");
        let found = err.lines().position(|l| l.contains(&prefix) && l.contains(message));
        let Some(i) = found else { panic!("no `{prefix}… {message}` in:\n{err}") };
        let next = err.lines().nth(i + 1).unwrap_or("");
        assert!(next.contains("hint:") && next.contains(hint), "{message}: hint `{next}`");
    }
    assert!(err.contains("has no closing `}`"), "{err}");
    // A share has no direction to say.
    assert!(
        err.contains("`exposed-comm/share` is not a change: it has no direction to say"),
        "{err}"
    );
    // `render` refuses the file the same way and writes nothing.
    let out_dir = dir.path().join("out");
    let r = util::verdict()
        .args(["render"])
        .arg(&file)
        .args(["--profile", "blog", "--format", "md", "--out"])
        .arg(&out_dir)
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2));
    assert!(!out_dir.exists() || std::fs::read_dir(&out_dir).unwrap().next().is_none());
}

/// Without a `narrative:` block the blog is still a post: it opens on the report's question and
/// its answer before the tally, its heading over the claims names who made them (the one
/// source's label; a model only when a prompt is quoted), and `render` warns that the post is
/// built from the claims alone.
#[test]
fn a_blog_without_a_narrative_opens_on_its_question_and_names_who_claimed() {
    let claims = "claims/mfu-2gpu-ab.yaml";
    let set = verdict::claims::load(&util::manifest_dir().join(claims)).unwrap();
    assert!(set.narrative.is_none() && set.sources.len() == 1);
    let dir = tempfile::tempdir().unwrap();
    let o = util::verdict()
        .current_dir(util::manifest_dir())
        .args(["render", claims, "--profile", "blog", "--format", "md", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    // Render says which slots it wrote from the audit: those with a default, in both posts.
    let warning = err
        .lines()
        .find(|l| l.starts_with("warning: report `mfu-2gpu-ab` has no `narrative:` block"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(warning.contains("(zh-TW, en)"), "{warning}");
    for slot in ["opening", "conditions", "claims", "closing", "next"] {
        assert!(warning.contains(&format!("`{slot}`")), "{slot}: {warning}");
    }
    // Slots with no default are not in the post, and not said to be written.
    for slot in ["prompt", "naming", "references"] {
        assert!(!warning.contains(&format!("`{slot}`")), "{slot}: {warning}");
    }
    // The default conditions name each trace by its label, with its kernels, counted here by
    // SQL over the fixture.
    let en = std::fs::read_to_string(dir.path().join("mfu-2gpu-ab.en.blog.md")).unwrap();
    for t in &set.traces {
        let db = rusqlite::Connection::open(&t.resolved).unwrap();
        let n: i64 = db
            .query_row("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL", [], |r| r.get(0))
            .unwrap();
        let label = &t.label.as_ref().unwrap()["en"];
        let want = format!("{}: an Nsight Systems", capitalised(label));
        let sentence =
            en.split(". ").find(|s| s.contains(&want)).unwrap_or_else(|| panic!("{want}"));
        let kernels = format!("{},{:03} kernels on devices 0–1", n / 1000, n % 1000);
        assert!(sentence.contains(&kernels), "{kernels}: {sentence}");
    }
    // The closing, without the author's: the report's decision, what the open items wait on.
    let decision = &set.report.decision.as_ref().unwrap()["en"];
    let closing = en.split("## Wrapping up").nth(1).unwrap();
    assert!(closing.trim_start().starts_with(decision.as_str()), "{closing}");
    for lang in ["en", "zh-TW"] {
        let md = std::fs::read_to_string(dir.path().join(format!("mfu-2gpu-ab.{lang}.blog.md")))
            .unwrap();
        let paragraphs: Vec<&str> =
            md.split("\n\n").map(str::trim).filter(|p| !p.starts_with('#')).collect();
        let question = set.report.question.as_ref().unwrap()[lang].clone();
        assert_eq!(paragraphs[0], question, "{lang}: the post opens on its question");
        // The answer, its placeholders filled: the author's words around them are there.
        let answer = &set.report.answer.as_ref().unwrap()[lang];
        let lead: String = answer.chars().take_while(|c| *c != '{').collect();
        assert!(paragraphs[1].starts_with(lead.trim_end()), "{lang}: {}", paragraphs[1]);
        let source = &set.sources[0].label[lang];
        let headings: Vec<&str> = md.lines().filter(|l| l.starts_with("## ")).collect();
        assert!(headings.iter().any(|h| h.contains(source.as_str())), "{lang}: {headings:?}");
        assert!(!md.contains("What the model answered") && !md.contains("模型怎麼回答"), "{lang}");
    }
    // The post that quotes a prompt keeps its model.
    assert!(blog("en").contains("## What the model answered"));
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next().map_or_else(String::new, |f| f.to_uppercase().chain(c).collect())
}

/// A narrative that leaves slots empty is told which the post wrote from the audit: not the
/// ones the author wrote.
#[test]
fn render_names_the_empty_slots_of_a_narrative_it_filled() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = util::manifest_dir().join("fixtures");
    let yaml = std::fs::read_to_string(util::manifest_dir().join("claims/mfu-2gpu-ab.yaml"))
        .unwrap()
        .replace("../fixtures/", &format!("{}/", fixtures.display()))
        + "\nnarrative:\n  opening:\n    zh-TW: \"開場。\"\n    en: \"An opening.\"\n";
    let claims = dir.path().join("partial.yaml");
    std::fs::write(&claims, yaml).unwrap();
    let o = util::verdict()
        .args(["render"])
        .arg(&claims)
        .args(["--profile", "blog", "--format", "md", "--out"])
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("warning: report")).collect();
    let [l] = lines[..] else { panic!("{err}") };
    assert!(l.contains("leaves slots of its narrative empty: its post (zh-TW, en)"), "{l}");
    assert!(
        !l.contains("`opening`") && l.contains("`conditions`") && l.contains("`closing`"),
        "{l}"
    );
}

/// The post cites the works its author lists (`narrative.references`, each linked) and ends on
/// them, not on a command: the line that says how to rerun every number stays, after the
/// gates it reruns.
#[test]
fn a_post_ends_on_its_references_not_on_a_command() {
    let set = verdict::claims::load(&util::manifest_dir().join(CLAIMS)).unwrap();
    let refs = &set.narrative.as_ref().unwrap().references;
    assert_eq!(refs.len(), 3);
    for (lang, heading) in [("en", "## References"), ("zh-TW", "## 參考資料")] {
        let md = blog(lang);
        let at = md.find(heading).unwrap_or_else(|| panic!("{lang}: no references"));
        let tail = md[at + heading.len()..].trim();
        let items: Vec<&str> = tail.lines().filter(|l| !l.trim().is_empty()).collect();
        let want: Vec<String> =
            refs.iter().map(|r| format!("- [{}](<{}>)", r.text[lang], r.url)).collect();
        assert_eq!(items, want, "{lang}: the post ends on its references");
        let rerun = md.find("verdict render claims/day26-profile-blind.yaml").unwrap();
        assert!(rerun < at, "{lang}: the rerun line comes before the end");
    }
    // A post without references ends on its closing, never on the command.
    let plain = blog_of("claims/tp-ab.yaml", "en");
    let last = plain.trim_end().lines().last().unwrap();
    assert!(!last.contains("verdict render"), "{last}");
}

/// Every generated before -> after sentence of a post agrees with the ledger: "against the
/// answer" only for a claim judged not supported, "is now" only for a supported one, "has
/// moved as far as" only for a partly supported one, "still a hypothesis" only for an open
/// one; a judged claim's sentence quotes its principal part's measured value. Over every post
/// without a narrative, where each such sentence is the tool's own, in both languages.
#[test]
fn each_generated_after_sentence_says_what_the_ledger_judged() {
    let phrases = [
        ("not_supported", "against the answer", "和回答相反"),
        ("supported", " is now ", "現在量到的是"),
        ("partially_supported", "has moved as far as", "現在前進到"),
        ("unverifiable", "is still a hypothesis", "仍然只是假設"),
    ];
    let mut judged = 0;
    for claims in PLAIN {
        let set = verdict::claims::load(&util::manifest_dir().join(claims)).unwrap();
        let (dir, id) = render_blog(claims);
        let ledger: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join(format!("{id}.evidence.json"))).unwrap(),
        )
        .unwrap();
        for (lang, open, close, next) in [
            ("en", "The answer's “", "” ", ". The answer's “"),
            ("zh-TW", "原本的「", "」，", "。原本的「"),
        ] {
            let md = std::fs::read_to_string(dir.path().join(format!("{id}.{lang}.blog.md")))
                .unwrap()
                .replace('–', "-")
                .replace('×', "x");
            for c in &set.claims {
                let r = ledger["results"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|r| r["id"] == c.id.as_str())
                    .unwrap();
                let verdict = r["verdict"].as_str().unwrap();
                let at = md
                    .find(&format!("{open}{}{close}", c.statement[lang].replace('–', "-")))
                    .unwrap_or_else(|| panic!("{claims} ({lang}): no sentence for `{}`", c.id));
                let rest = &md[at + open.len()..];
                let end = rest.find(next).or_else(|| rest.find("\n")).unwrap();
                let sentence = &rest[..end];
                for (v, en, zh) in phrases {
                    let says = sentence.contains(if lang == "en" { en } else { zh });
                    assert!(
                        !says || v == verdict,
                        "{claims} ({lang}) `{}`, judged {verdict}: {sentence}",
                        c.id
                    );
                }
                if matches!(verdict, "supported" | "not_supported") {
                    let principal = r["principal"].as_str().unwrap();
                    let p = r["parts"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|p| p["id"] == principal)
                        .unwrap();
                    let value = p["formula"]["display"].as_str().unwrap();
                    assert!(
                        sentence.contains(value),
                        "{claims} ({lang}) `{}`: {value} not in {sentence}",
                        c.id
                    );
                    judged += 1;
                }
            }
        }
    }
    // The examples judge claims both ways: the test reads some of each.
    assert!(judged >= 8, "{judged}");
}
