//! Opens the compiled catalog and searches it, so the tables and the embedded index are used
//! (and kept in the binary).

toolcat::include_catalog!();

fn main() {
    let catalog = toolcat_generated::catalog();
    let query = std::env::args().nth(1).unwrap_or_else(|| "read a file".to_string());
    match catalog.search(&query, catalog.full_profile(), 5) {
        Ok(hits) => {
            for hit in hits {
                println!("{}", catalog.exported_name(hit.tool));
            }
        }
        Err(e) => eprintln!("search failed: {e}"),
    }
}
