//! Commands laid out for the page: broken only between arguments, with shell continuations,
//! so that the text copied out of a PDF or a Markdown code block runs as it is.
//!
//! An option stays on one line with its value. A word is never cut: a word longer than a line
//! (a long absolute path, a regex) gets a line of its own and overflows it, because a word cut
//! by a backslash-newline is read back whole only when nothing comes before the next piece,
//! and text copied out of a PDF keeps the block's indentation on every line. The Typst
//! template scales such a block down to the page instead.

use crate::audit::shell_quote;

/// Characters per command line in the reports: 8pt mono across an A4 text block.
pub const REPORT_WIDTH: usize = 92;

/// `argv` as shell lines of at most `width` characters (a word longer than that on a line of
/// its own), continued with ` \`, later lines indented by two spaces.
pub fn layout(argv: &[String], width: usize) -> String {
    let width = width.max(16);
    // Options with their values form one unit.
    let mut units: Vec<Vec<String>> = Vec::new();
    for w in argv {
        let joins = units
            .last()
            .is_some_and(|u| u.len() == 1 && u[0].starts_with("--") && !w.starts_with("--"));
        match units.last_mut() {
            Some(u) if joins => u.push(shell_quote(w)),
            _ => units.push(vec![shell_quote(w)]),
        }
    }
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for (i, unit) in units.iter().enumerate() {
        let text = unit.join(" ");
        // Room for " \" after it unless it is the last unit.
        let tail = if i + 1 == units.len() { 0 } else { 2 };
        let sep = usize::from(!line.trim().is_empty());
        if line.trim().is_empty()
            || line.chars().count() + sep + text.chars().count() + tail <= width
        {
            if sep == 1 {
                line.push(' ');
            }
            if line.chars().count() + text.chars().count() + tail <= width {
                line.push_str(&text);
                continue;
            }
        } else {
            lines.push(format!("{line} \\"));
            line = "  ".to_string();
            if line.len() + text.chars().count() + tail <= width {
                line.push_str(&text);
                continue;
            }
        }
        // The unit alone is too long: place its words one by one, cutting any that must be.
        let raw: Vec<&String> = argv_of(unit, argv, &units, i);
        for (k, w) in raw.iter().enumerate() {
            let quoted = shell_quote(w);
            if k > 0 {
                if line.chars().count() + 1 + quoted.chars().count() + tail <= width {
                    line.push(' ');
                } else {
                    lines.push(format!("{line} \\"));
                    line = "  ".to_string();
                }
            }
            // A word too long for any line overflows its own.
            line.push_str(&quoted);
        }
    }
    lines.push(line);
    lines.join("\n")
}

/// The unquoted words of unit `i`.
fn argv_of<'a>(
    unit: &[String],
    argv: &'a [String],
    units: &[Vec<String>],
    i: usize,
) -> Vec<&'a String> {
    let start: usize = units[..i].iter().map(Vec::len).sum();
    argv[start..start + unit.len()].iter().collect()
}

#[cfg(test)]
mod tests {
    use super::layout;
    use proptest::prelude::*;

    fn words(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// What a POSIX shell makes of the text: one word a line.
    fn shell_words(text: &str) -> Vec<String> {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf '%s\\0' {text}"))
            .output()
            .expect("sh runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().split_terminator('\0').map(str::to_string).collect()
    }

    #[test]
    fn short_commands_stay_on_one_line() {
        let argv = words(&["verdict", "query", "overlap", "a.sqlite", "--device", "4", "--json"]);
        assert_eq!(layout(&argv, 92), "verdict query overlap a.sqlite --device 4 --json");
    }

    #[test]
    fn an_option_is_never_separated_from_its_value() {
        let argv = words(&[
            "verdict",
            "query",
            "overlap",
            "fixtures/day26/megatron.sqlite",
            "--device",
            "4",
            "--window",
            "39.964:46.123",
            "--semantics",
            "contain",
            "--json",
        ]);
        let text = layout(&argv, 60);
        assert_eq!(
            text,
            "verdict query overlap fixtures/day26/megatron.sqlite \\\n  --device 4 --window 39.964:46.123 --semantics contain \\\n  --json"
        );
        assert_eq!(shell_words(&text), argv);
    }

    #[test]
    fn a_long_path_and_a_quoted_regex_are_never_cut() {
        let path = format!("/{}/h100_2gpu_1s.sqlite", "very-long-folder-name".repeat(8));
        let argv = words(&[
            "verdict",
            "query",
            "kernels",
            &path,
            "--regex",
            "^(ncclDevKernel|flash_bwd)_[a-z ']+$",
            "--json",
        ]);
        let text = layout(&argv, 40);
        // Each word on one line: the path overflows a line of its own, and indentation
        // added before every line (as text copied out of a PDF has it) changes no word.
        assert!(text.lines().any(|l| l.trim_start().trim_end_matches(" \\") == path), "{text}");
        for l in text.lines() {
            let words = shell_words(l.trim_end_matches(" \\"));
            assert!(l.chars().count() <= 40 || words.len() == 1, "{l:?} is longer than 40");
        }
        assert_eq!(shell_words(&text), argv);
        let indented: String = text.lines().map(|l| format!("    {l}\n")).collect();
        assert_eq!(shell_words(&indented), argv);
    }

    #[test]
    fn a_word_with_control_characters_shows_none_and_bash_reads_it_back() {
        let argv = words(&["verdict", "--match", "a\u{1b}[31mb'c\\\u{7}\u{202e}\u{9b}", "--json"]);
        let text = layout(&argv, 92);
        assert_eq!(text, r"verdict --match $'a\x1b[31mb\'c\\\x07\xe2\x80\xae\xc2\x9b' --json");
        // Dollar-single quotes are POSIX.1-2024; the `sh` of older systems may lack them.
        let Ok(out) = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!("printf '%s\\0' {text}"))
            .output()
        else {
            eprintln!("skipping the read-back: no bash");
            return;
        };
        let back: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .split_terminator('\0')
            .map(str::to_string)
            .collect();
        assert_eq!(back, argv);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn the_shell_reads_back_the_same_words(
            argv in proptest::collection::vec("[a-zA-Z0-9 ./:'\"$*()_-]{1,70}", 1..8),
            width in 16usize..100,
        ) {
            let text = layout(&argv, width);
            for l in text.lines() {
                // Only a word longer than the width overflows, alone on its line.
                let alone = argv.iter().any(|w| {
                    l.trim_start().trim_end_matches(" \\") == crate::audit::shell_quote(w)
                });
                prop_assert!(l.chars().count() <= width || alone, "{:?} longer than {}", l, width);
            }
            prop_assert_eq!(shell_words(&text), argv.clone());
            let indented: String = text.lines().map(|l| format!("  {l}\n")).collect();
            prop_assert_eq!(shell_words(&indented), argv);
        }
    }
}
