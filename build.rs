//! Compiles the problem catalog (`docs/problems.json`) into the crate: one
//! static table of slug → status, title, detail, finality, so the Worker renders
//! every problem document from the same file the JS package reads,
//! without parsing JSON at run time.

use std::{env, fs, path::Path};

fn main() {
    println!("cargo:rerun-if-changed=docs/problems.json");
    let text = fs::read_to_string("docs/problems.json").expect("docs/problems.json is readable");
    let catalog: serde_json::Value =
        serde_json::from_str(&text).expect("docs/problems.json is valid JSON");
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
    let out =
        Path::new(&env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("problem_catalog.rs");
    fs::write(out, code).expect("the generated catalog is written");
}
