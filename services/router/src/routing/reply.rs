//! Getting the JSON payload out of a model reply that is supposed to be JSON only.

/// Returns the JSON part of a model reply: surrounding whitespace, one leading closed
/// `<think>…</think>` block (reasoning models served by Ollama emit one) and one code fence
/// around the whole reply (```` ```json … ``` ````) are tolerated. Anything else — prose before
/// or after the JSON — is left in place so that parsing fails, because the contract is "JSON
/// only".
pub fn json_payload(raw: &str) -> &str {
    let mut s = raw.trim();
    if let Some(after_open) = s.strip_prefix("<think>") {
        if let Some(close) = after_open.find("</think>") {
            s = after_open
                .get(close + "</think>".len()..)
                .unwrap_or("")
                .trim();
        }
    }
    if let Some(inner) = s.strip_prefix("```") {
        if let Some(body) = inner.strip_suffix("```") {
            // The rest of the opening line is the language tag (`json`, or nothing).
            let body = match body.find('\n') {
                Some(newline) => {
                    let tag = body.get(..newline).unwrap_or("").trim();
                    if tag.chars().all(|c| c.is_ascii_alphanumeric()) {
                        body.get(newline + 1..).unwrap_or("")
                    } else {
                        body
                    }
                }
                None => body,
            };
            s = body.trim();
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_json_is_returned_trimmed() {
        assert_eq!(json_payload("  {\"a\":1}\n"), "{\"a\":1}");
    }

    #[test]
    fn a_code_fence_is_tolerated() {
        assert_eq!(json_payload("```json\n{\"a\":1}\n```"), "{\"a\":1}");
        assert_eq!(json_payload("```\n{\"a\":1}\n```"), "{\"a\":1}");
        assert_eq!(json_payload("```{\"a\":1}```"), "{\"a\":1}");
    }

    #[test]
    fn a_leading_think_block_is_tolerated() {
        assert_eq!(
            json_payload("<think>hmm</think>\n```json\n{\"a\":1}\n```"),
            "{\"a\":1}"
        );
        // Unclosed: nothing is stripped, so parsing fails later.
        assert_eq!(json_payload("<think>hmm {\"a\":1}"), "<think>hmm {\"a\":1}");
    }

    #[test]
    fn prose_around_json_is_kept_so_parsing_fails() {
        assert_eq!(json_payload("答え: {\"a\":1}"), "答え: {\"a\":1}");
        assert_eq!(
            json_payload("```json\n{\"a\":1}\n```\n以上です"),
            "```json\n{\"a\":1}\n```\n以上です"
        );
    }
}
