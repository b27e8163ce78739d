// The declarations module compiles on its own, with no toolcat item in scope.
mod declarations {
    include!(concat!(
        env!("TOOLCAT_UI_CATALOG_DIR"),
        "/toolcat_declarations.rs"
    ));
}

use declarations::ToolId;

fn main() {
    assert_eq!(declarations::LEN, ToolId::ALL.len());
    for id in ToolId::ALL {
        assert_eq!(declarations::NAMES[id.index()], id.name());
        assert_eq!(ToolId::from_name(id.name()), Some(id));
        assert_eq!(ToolId::from_index(id.index()), Some(id));
    }
    assert_eq!(ToolId::from_name("write-file"), Some(ToolId::WriteFile));
    assert_eq!(ToolId::from_index(declarations::LEN), None);
}
