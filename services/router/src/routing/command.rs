//! Explicit commands (`/code`, `/local`, …): only at the very start of a message.

use serde::Serialize;

use ghost_shared::routing::Route;

/// A recognised explicit command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Command {
    /// `/chat`, `/code`, `/analyze`, `/plan`, `/ops`, `/research`: force this route.
    Route(Route),
    /// `/local`: set the session's `local_only` flag (no cloud calls).
    Local,
    /// `/cloud`: clear the session's `local_only` flag.
    Cloud,
}

impl Command {
    /// The command word as the user types it (`"/code"`), used as evidence in logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Command::Route(Route::Chat) => "/chat",
            Command::Route(Route::Code) => "/code",
            Command::Route(Route::Analyze) => "/analyze",
            Command::Route(Route::Plan) => "/plan",
            Command::Route(Route::Ops) => "/ops",
            Command::Route(Route::Research) => "/research",
            Command::Local => "/local",
            Command::Cloud => "/cloud",
        }
    }

    /// Whether this command changes the session flag rather than choosing a route.
    pub fn is_flag(self) -> bool {
        matches!(self, Command::Local | Command::Cloud)
    }
}

/// Looks up a command word (without the slash). ASCII case is ignored because phone keyboards
/// capitalise the first letter; anything else (`/codex`, full-width letters) is not a command.
fn command_word(word: &str) -> Option<Command> {
    let lower = word.to_ascii_lowercase();
    let command = match lower.as_str() {
        "chat" => Command::Route(Route::Chat),
        "code" => Command::Route(Route::Code),
        "analyze" => Command::Route(Route::Analyze),
        "plan" => Command::Route(Route::Plan),
        "ops" => Command::Route(Route::Ops),
        "research" => Command::Route(Route::Research),
        "local" => Command::Local,
        "cloud" => Command::Cloud,
        _ => return None,
    };
    Some(command)
}

/// Parses a command at the very start of `text` (leading whitespace ignored) and returns it
/// with the remaining text (trimmed). The command word must be followed by whitespace
/// (full-width space included) or the end of the text, so `/codex …` and `/code:` are not
/// commands, and text that merely mentions `/code` later on is never a command — which is what
/// makes commands stronger than prompt injection.
pub fn parse_command(text: &str) -> Option<(Command, &str)> {
    let trimmed = text.trim_start();
    let rest = trimmed.strip_prefix('/')?;
    let word_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let (word, remainder) = rest.split_at(word_end);
    let command = command_word(word)?;
    Some((command, remainder.trim()))
}

/// The commands at the start of a message: at most one flag command (`/local`/`/cloud`)
/// optionally followed by one route command, e.g. `/local /plan 引っ越し`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedCommands<'a> {
    /// `/local` or `/cloud` if the message started with one.
    pub flag: Option<Command>,
    /// The route forced by a route command, if any.
    pub route: Option<Route>,
    /// The text after the commands (trimmed).
    pub text: &'a str,
}

/// Parses the leading commands of a message. A flag command may be followed by a route
/// command (both are the user's own leading words, so both are honoured); a route command
/// ends command parsing, so `/plan /local` routes the text `/local` as PLAN.
pub fn parse_commands(text: &str) -> ParsedCommands<'_> {
    let mut parsed = ParsedCommands {
        flag: None,
        route: None,
        text: text.trim(),
    };
    let Some((first, rest)) = parse_command(text) else {
        return parsed;
    };
    parsed.text = rest;
    match first {
        Command::Route(route) => parsed.route = Some(route),
        flag => {
            parsed.flag = Some(flag);
            if let Some((Command::Route(route), after)) = parse_command(rest) {
                parsed.route = Some(route);
                parsed.text = after;
            }
        }
    }
    parsed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_is_recognised_at_the_start() {
        for (input, expected) in [
            ("/code x", Command::Route(Route::Code)),
            ("/analyze x", Command::Route(Route::Analyze)),
            ("/plan x", Command::Route(Route::Plan)),
            ("/ops x", Command::Route(Route::Ops)),
            ("/research x", Command::Route(Route::Research)),
            ("/chat x", Command::Route(Route::Chat)),
            ("/local x", Command::Local),
            ("/cloud x", Command::Cloud),
        ] {
            assert_eq!(parse_command(input), Some((expected, "x")), "{input}");
            assert_eq!(expected.as_str(), input.trim_end_matches(" x"));
        }
    }

    #[test]
    fn command_must_be_followed_by_whitespace_or_end() {
        assert_eq!(parse_command("/codex fix"), None);
        assert_eq!(parse_command("/code:fix"), None);
        assert_eq!(parse_command("/code直して"), None);
        assert_eq!(
            parse_command("/code"),
            Some((Command::Route(Route::Code), ""))
        );
        assert_eq!(
            parse_command("/code\u{3000}直して"),
            Some((Command::Route(Route::Code), "直して"))
        );
        assert_eq!(
            parse_command("/analyze\nname,score\nA,1"),
            Some((Command::Route(Route::Analyze), "name,score\nA,1"))
        );
    }

    #[test]
    fn command_only_counts_at_the_very_start() {
        assert_eq!(parse_command("「/code」って書いてみて"), None);
        assert_eq!(parse_command("please /code this"), None);
        assert_eq!(
            parse_command("  /plan x"),
            Some((Command::Route(Route::Plan), "x"))
        );
    }

    #[test]
    fn unknown_slash_words_are_not_commands() {
        assert_eq!(parse_command("/help me"), None);
        assert_eq!(parse_command("/ code"), None);
        assert_eq!(parse_command("/"), None);
        assert_eq!(parse_command("/ｃｏｄｅ x"), None);
    }

    #[test]
    fn ascii_case_is_ignored() {
        assert_eq!(
            parse_command("/Code x"),
            Some((Command::Route(Route::Code), "x"))
        );
        assert_eq!(parse_command("/LOCAL"), Some((Command::Local, "")));
    }

    #[test]
    fn flag_then_route_command_are_both_parsed() {
        let parsed = parse_commands("/local /plan 引っ越し");
        assert_eq!(parsed.flag, Some(Command::Local));
        assert_eq!(parsed.route, Some(Route::Plan));
        assert_eq!(parsed.text, "引っ越し");
    }

    #[test]
    fn route_command_ends_command_parsing() {
        let parsed = parse_commands("/plan /local");
        assert_eq!(parsed.flag, None);
        assert_eq!(parsed.route, Some(Route::Plan));
        assert_eq!(parsed.text, "/local");
    }

    #[test]
    fn plain_text_has_no_commands() {
        let parsed = parse_commands("  ねえ  ");
        assert_eq!(
            parsed,
            ParsedCommands {
                flag: None,
                route: None,
                text: "ねえ"
            }
        );
    }

    #[test]
    fn two_flag_commands_only_take_the_first() {
        let parsed = parse_commands("/local /cloud x");
        assert_eq!(parsed.flag, Some(Command::Local));
        assert_eq!(parsed.route, None);
        assert_eq!(parsed.text, "/cloud x");
    }
}
