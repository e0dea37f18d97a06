//! Compiles the rules both languages share into the crate, from their one
//! home each (scripts/generate.mjs writes the JS package's copies,
//! client/generated/, from the same files), without parsing JSON at run time:
//! - the problem catalog (`docs/problems.json`): one static table of slug →
//!   status, title, detail, finality;
//! - the configuration defaults (`src/config/defaults.json`): one constant
//!   per variable, `config::defaults::NAME` (a whole number as `u64`,
//!   true/false as `bool`, else `&str`);
//! - the outcomes the trend follows (`src/ledger/outcome/trended.json`):
//!   `Counter::TRENDED`, in the file's order;
//! - the limits (`src/protocol/limits.json`): one constant each,
//!   `protocol::limits::NAME`, of the type the file names.

use std::{env, fs, path::Path};

fn main() {
    let out = env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    problem_catalog(Path::new(&out));
    defaults(Path::new(&out));
    trended(Path::new(&out));
    limits(Path::new(&out));
}

/// `protocol::limits`: each limit as a constant of its named type (a
/// number, or a list of numbers as an array).
fn limits(out: &Path) {
    let file = read_json("src/protocol/limits.json");
    let limits = file["limits"]
        .as_object()
        .expect("src/protocol/limits.json has its limits");
    let mut code = String::new();
    for (name, entry) in limits {
        let ty = entry["rust"]
            .as_str()
            .expect("every limit names its Rust type");
        let doc = entry["doc"].as_str().expect("every limit says what it is");
        let number = |v: &serde_json::Value| {
            v.as_u64()
                .unwrap_or_else(|| panic!("{name}: a limit is a whole number"))
                .to_string()
        };
        let literal = match &entry["value"] {
            serde_json::Value::Array(items) => {
                let items: Vec<String> = items.iter().map(number).collect();
                format!("[{}]", items.join(", "))
            }
            v => number(v),
        };
        code.push_str(&format!(
            "/// {doc}\n/// (src/protocol/limits.json)\npub const {name}: {ty} = {literal};\n"
        ));
    }
    fs::write(out.join("limits.rs"), code).expect("the generated limits are written");
}

/// The JSON file at `path`.
fn read_json(path: &str) -> serde_json::Value {
    println!("cargo:rerun-if-changed={path}");
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{path} is readable: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path} is valid JSON: {e}"))
}

/// `config::defaults`: each variable's default, typed by its published string.
fn defaults(out: &Path) {
    let file = read_json("src/config/defaults.json");
    let variables = file["variables"]
        .as_object()
        .expect("src/config/defaults.json has its variables");
    let mut code = String::new();
    for (name, value) in variables {
        let raw = value.as_str().expect("every default is a string");
        let (ty, literal) = if let Ok(n) = raw.parse::<u64>() {
            ("u64", n.to_string())
        } else if raw == "true" || raw == "false" {
            ("bool", raw.to_string())
        } else {
            ("&str", format!("{raw:?}"))
        };
        code.push_str(&format!(
            "/// `{name}` when it is not set: `{raw}` (src/config/defaults.json).\npub const {name}: {ty} = {literal};\n"
        ));
    }
    fs::write(out.join("defaults.rs"), code).expect("the generated defaults are written");
}

/// `Counter::TRENDED`: the counters named in trended.json, in its order.
fn trended(out: &Path) {
    let file = read_json("src/ledger/outcome/trended.json");
    let names: Vec<&str> = file["trended"]
        .as_array()
        .expect("src/ledger/outcome/trended.json lists its counters")
        .iter()
        .map(|n| n.as_str().expect("a counter name is a string"))
        .collect();
    let variants: Vec<String> = names
        .iter()
        .map(|name| {
            let camel: String = name
                .split('_')
                .map(|part| {
                    let mut c = part.chars();
                    c.next()
                        .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                        .unwrap_or_default()
                })
                .collect();
            format!("Counter::{camel}")
        })
        .collect();
    let code = format!(
        "/// src/ledger/outcome/trended.json, in its order.\npub const TRENDED: [Counter; {}] = [{}];\n",
        variants.len(),
        variants.join(", ")
    );
    fs::write(out.join("trended.rs"), code).expect("the generated trend list is written");
}

/// `protocol::problem::CATALOG` and `PROBLEM_BASE`.
fn problem_catalog(out: &Path) {
    let catalog = read_json("docs/problems.json");
    let base = catalog["base"]
        .as_str()
        .expect("the catalog names its base");
    let problems = catalog["problems"]
        .as_object()
        .expect("the catalog's problems are an object");
    let mut rows = String::new();
    for (slug, entry) in problems {
        let status = entry["status"]
            .as_u64()
            .expect("every problem has a status");
        let title = entry["title"].as_str().expect("every problem has a title");
        let detail = match entry.get("detail").and_then(|d| d.as_str()) {
            Some(d) => format!("Some({d:?})"),
            None => "None".to_string(),
        };
        let is_final = entry
            .get("final")
            .map(|f| f.as_bool().expect("\"final\" is a boolean"))
            .unwrap_or(false);
        rows.push_str(&format!(
            "    CatalogEntry {{ slug: {slug:?}, status: {status}, title: {title:?}, detail: {detail}, is_final: {is_final} }},\n"
        ));
    }
    let code = format!(
        "/// `base` of docs/problems.json.\npub const PROBLEM_BASE: &str = {base:?};\n\n/// The entries of docs/problems.json.\npub static CATALOG: &[CatalogEntry] = &[\n{rows}];\n"
    );
    fs::write(out.join("problem_catalog.rs"), code).expect("the generated catalog is written");
}
