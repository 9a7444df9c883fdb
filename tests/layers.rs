//! The core's layers import one way (`docs/architecture.md`): each top-level module of
//! `src/` names only modules below it in code (`crate::x` paths and `use crate::{..}`
//! lists; comments and doc links are not imports). A new cycle, such as `gpu` reaching
//! back into `backends` for a type, fails here with the file and the path.

use std::collections::HashMap;
use std::path::Path;

/// Rank of each top-level module: a module may import only modules of a lower rank.
const LAYERS: &[(&str, u32)] = &[
    ("design", 0),
    ("dsp", 1),
    ("signal", 2),
    ("chain", 2),
    ("engine", 3),
    ("run", 4),
    ("offline", 5),
    ("gpu", 5),
    ("backends", 6),
];

fn code_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().map(|l| l.split("//").next().unwrap_or(""))
}

fn visit(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            visit(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_module_imports_a_layer_above_or_beside_it() {
    let rank: HashMap<&str, u32> = LAYERS.iter().copied().collect();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    visit(&src, &mut files);
    let mut wrong = Vec::new();
    let mut seen_modules = std::collections::BTreeSet::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap();
        let top = rel.components().next().unwrap().as_os_str().to_string_lossy().trim_end_matches(".rs").to_string();
        if top == "lib" {
            continue;
        }
        seen_modules.insert(top.clone());
        let Some(&mine) = rank.get(top.as_str()) else {
            wrong.push(format!("{}: module `{top}` has no layer in this test's list (and docs/architecture.md)", rel.display()));
            continue;
        };
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in code_lines(&text).enumerate() {
            let mut named: Vec<String> = line.match_indices("crate::").map(|(i, _)| line[i + 7..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()).collect();
            if let Some(i) = line.find("use crate::{") {
                let list = &line[i + 12..line[i..].find('}').map_or(line.len(), |j| i + j)];
                named.extend(list.split(',').map(|p| p.trim().split("::").next().unwrap_or("").to_string()));
            }
            for m in named {
                if m == top || m.is_empty() {
                    continue;
                }
                if let Some(&theirs) = rank.get(m.as_str()) {
                    if theirs >= mine {
                        wrong.push(format!("{}:{}: `{top}` imports `{m}`, a layer above or beside it", rel.display(), n + 1));
                    }
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    for (m, _) in LAYERS {
        assert!(seen_modules.contains(*m), "the list names `{m}`, which src/ no longer has");
    }
}
