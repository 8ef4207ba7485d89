//! Prompt templates: `{{…}}` placeholders checked once, when a template is loaded, so a typo
//! fails at start-up instead of reaching a model as literal braces.

/// The first `{{…}}` placeholder in `template` that is not in `known` (an unclosed `{{`
/// counts, up to the end of the text), or `None` when every placeholder is known.
pub fn unknown_placeholder<'t>(template: &'t str, known: &[&str]) -> Option<&'t str> {
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start..];
        let end = after.find("}}").map_or(after.len(), |e| e + 2);
        let placeholder = &after[..end];
        if !known.contains(&placeholder) {
            return Some(placeholder);
        }
        rest = &after[end..];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_first_unknown_or_unclosed_placeholder() {
        let known = ["{{name}}", "{{persona}}"];
        assert_eq!(unknown_placeholder("{{name}} is {{persona}}", &known), None);
        assert_eq!(
            unknown_placeholder("{{name}} {{nmae}}", &known),
            Some("{{nmae}}")
        );
        assert_eq!(unknown_placeholder("a {{name", &known), Some("{{name"));
        assert_eq!(unknown_placeholder("single {braces} pass", &known), None);
    }
}
