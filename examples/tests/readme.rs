//! The README's "Discovery loop" section shows `openai_loop`'s code: every Rust block there is a
//! verbatim excerpt of `examples/openai_loop.rs`.

const README: &str = include_str!("../../README.md");
const OPENAI_LOOP: &str = include_str!("../examples/openai_loop.rs");

#[test]
fn every_rust_block_of_the_discovery_loop_section_is_in_openai_loop() {
    let start = README
        .find("## Discovery loop")
        .expect("the README has a discovery loop section");
    let section = &README[start..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |e| e + 3)];
    let blocks: Vec<&str> = section
        .split("```rust\n")
        .skip(1)
        .map(|rest| &rest[..rest.find("```").expect("every block is closed")])
        .collect();
    assert!(!blocks.is_empty(), "the section shows no Rust block");
    for body in blocks {
        assert!(
            OPENAI_LOOP.contains(body),
            "a README block is not in examples/examples/openai_loop.rs; update one to match the other:\n{body}"
        );
    }
}
