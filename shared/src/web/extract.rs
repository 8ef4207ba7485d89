//! Readable text out of an HTML page: the title, and the body's text with scripts, styles
//! and comments dropped, entities decoded, block elements on their own lines.
//!
//! A small scanner, not a full HTML parser: pages only need to become text a model can read,
//! and broken markup must never make it fail (whatever cannot be read as a tag is text).

/// Elements whose content is never text.
const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "iframe", "object",
];

/// Elements that start a new line.
const BLOCKS: &[&str] = &[
    "p",
    "br",
    "div",
    "li",
    "ul",
    "ol",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "tr",
    "table",
    "section",
    "article",
    "header",
    "footer",
    "nav",
    "aside",
    "main",
    "blockquote",
    "pre",
    "hr",
    "dt",
    "dd",
    "dl",
    "figure",
    "figcaption",
    "form",
    "address",
    "td",
    "th",
];

/// A page read as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractedText {
    /// The `<title>`, whitespace collapsed; none when absent or empty.
    pub title: Option<String>,
    /// The visible text, at most the limit's characters.
    pub text: String,
    /// Text was cut at the limit.
    pub truncated: bool,
}

/// Title and visible text of `html`, the text cut after `max_chars` characters.
pub fn html_to_text(html: &str, max_chars: usize) -> ExtractedText {
    let mut raw = String::with_capacity(html.len().min(1 << 20));
    let mut title: Option<String> = None;
    let mut rest = html;
    while let Some(lt) = rest.find('<') {
        raw.push_str(&rest[..lt]);
        let after = &rest[lt..];
        if let Some(comment) = after.strip_prefix("<!--") {
            rest = comment.find("-->").map_or("", |end| &comment[end + 3..]);
            continue;
        }
        let Some(gt) = after.find('>') else {
            // An unterminated tag: the rest is not text anybody reads.
            rest = "";
            break;
        };
        let Some(tag) = Tag::read(&after[1..gt]) else {
            // `a < b`: a plain character, the scan goes on right after it.
            raw.push('<');
            rest = &after[1..];
            continue;
        };
        rest = &after[gt + 1..];
        if !tag.closing && tag.name == "title" {
            let (inner, next) = until_closing(rest, "title");
            let t = collapse_line(&decode_entities(inner));
            if title.is_none() && !t.is_empty() {
                title = Some(t);
            }
            rest = next;
            continue;
        }
        if !tag.closing && !tag.self_closing && SKIPPED.contains(&tag.name.as_str()) {
            let name = tag.name.clone();
            rest = until_closing(rest, &name).1;
            continue;
        }
        if BLOCKS.contains(&tag.name.as_str()) {
            raw.push('\n');
        } else {
            raw.push(' ');
        }
    }
    raw.push_str(rest);
    let text = tidy(&decode_entities(&raw));
    let (text, truncated) = cut_chars(text, max_chars);
    ExtractedText {
        title,
        text,
        truncated,
    }
}

/// `text` cut after `max_chars` characters, and whether it was cut.
pub fn cut_chars(text: String, max_chars: usize) -> (String, bool) {
    match text.char_indices().nth(max_chars) {
        Some((at, _)) => (text[..at].to_owned(), true),
        None => (text, false),
    }
}

struct Tag {
    name: String,
    closing: bool,
    self_closing: bool,
}

impl Tag {
    /// The tag inside `<…>`; none when it is not one (`a < b`). Declarations (`<!DOCTYPE>`)
    /// and processing instructions read as a nameless tag: dropped, not text.
    fn read(inner: &str) -> Option<Tag> {
        let (closing, body) = match inner.strip_prefix('/') {
            Some(b) => (true, b),
            None => (false, inner),
        };
        if body.starts_with('!') || body.starts_with('?') {
            // Declarations and processing instructions: not text, not a block.
            return Some(Tag {
                name: String::new(),
                closing: true,
                self_closing: true,
            });
        }
        let name: String = body
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        if name.is_empty() || !body.chars().next().is_some_and(|c| c.is_ascii_alphabetic()) {
            return None;
        }
        Some(Tag {
            name,
            closing,
            self_closing: body.trim_end().ends_with('/'),
        })
    }
}

/// The content up to `</name…>` (case-insensitive) and what follows it; all of `rest` when
/// the element is never closed.
fn until_closing<'a>(rest: &'a str, name: &str) -> (&'a str, &'a str) {
    let needle = format!("</{name}");
    let lower = rest.to_ascii_lowercase();
    match lower.find(&needle) {
        Some(start) => {
            let after = &rest[start..];
            let end = after.find('>').map_or(rest.len(), |gt| start + gt + 1);
            (&rest[..start], &rest[end..])
        }
        None => (rest, ""),
    }
}

/// Named and numeric character references decoded; unknown ones kept as written.
pub fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        let end = after
            .char_indices()
            .take(12)
            .find(|&(_, c)| c == ';')
            .map(|(i, _)| i);
        let decoded = end.and_then(|end| entity(&after[..end]).map(|c| (c, end)));
        match decoded {
            Some((c, end)) => {
                out.push(c);
                rest = &after[end + 1..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn entity(name: &str) -> Option<char> {
    if let Some(num) = name.strip_prefix('#') {
        let code = match num.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => num.parse().ok()?,
        };
        return char::from_u32(code).filter(|c| *c != '\0');
    }
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => ' ',
        "mdash" => '—',
        "ndash" => '–',
        "hellip" => '…',
        "copy" => '©',
        _ => return None,
    })
}

/// Runs of spaces collapsed within lines, empty lines dropped, lines trimmed.
fn tidy(s: &str) -> String {
    s.lines()
        .map(collapse_line)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

fn collapse_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_scripts_styles_comments_and_keeps_blocks_apart() {
        let html = "<!DOCTYPE html><html><head><title> Tea &amp; Time </title>\
            <style>p{color:red}</style></head><body><script>var x = '<p>no</p>';</script>\
            <h1>Green tea</h1><!-- hidden --><p>Steep at&nbsp;80&#176;C.</p>\
            <p>Then <b>drink</b> it.</p></body></html>";
        let got = html_to_text(html, 1000);
        assert_eq!(got.title.as_deref(), Some("Tea & Time"));
        assert_eq!(got.text, "Green tea\nSteep at 80°C.\nThen drink it.");
        assert!(!got.truncated);
    }

    #[test]
    fn broken_markup_is_text_not_an_error() {
        let got = html_to_text("a < b and <p>c &bogus; d &#xZZ; <unclosed", 100);
        assert_eq!(got.text, "a < b and\nc &bogus; d &#xZZ;");
        assert_eq!(got.title, None);
    }

    #[test]
    fn cuts_on_character_boundaries() {
        let got = html_to_text("<p>日本語のテキスト</p>", 3);
        assert_eq!(got.text, "日本語");
        assert!(got.truncated);
    }

    #[test]
    fn unclosed_script_hides_the_rest() {
        let got = html_to_text("<p>shown</p><script>never shown", 100);
        assert_eq!(got.text, "shown");
    }
}
