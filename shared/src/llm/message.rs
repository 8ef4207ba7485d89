//! Provider-neutral chat messages.

use std::path::PathBuf;

/// Author of a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// Instructions / persona prompt.
    System,
    /// The human side.
    User,
    /// The model side.
    Assistant,
}

impl Role {
    /// Wire name shared by both providers.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// An image attached to a message. `url` wins when present; otherwise `source_path` is read
/// and inlined as a data URI.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImagePart {
    /// A `data:` URI or an `http(s)://` URL, sent as is.
    pub url: Option<String>,
    /// Local temporary media file the image came from (also audited before/after the call).
    pub source_path: Option<PathBuf>,
}

impl ImagePart {
    /// Image given by URL (data URI or http URL).
    pub fn from_url(url: impl Into<String>) -> Self {
        ImagePart {
            url: Some(url.into()),
            source_path: None,
        }
    }

    /// Image given by a local file, inlined at request time.
    pub fn from_path(path: impl Into<PathBuf>) -> Self {
        ImagePart {
            url: None,
            source_path: Some(path.into()),
        }
    }
}

/// One piece of a message's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContentPart {
    /// Plain text.
    Text(String),
    /// An image.
    Image(ImagePart),
}

/// A chat message: a role and its ordered content parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatMessage {
    /// Author.
    pub role: Role,
    /// Ordered content.
    pub parts: Vec<ContentPart>,
}

impl ChatMessage {
    /// A message with arbitrary parts.
    pub fn new(role: Role, parts: Vec<ContentPart>) -> Self {
        ChatMessage { role, parts }
    }

    /// A system message with one text part.
    pub fn system(text: impl Into<String>) -> Self {
        Self::new(Role::System, vec![ContentPart::Text(text.into())])
    }

    /// A user message with one text part.
    pub fn user(text: impl Into<String>) -> Self {
        Self::new(Role::User, vec![ContentPart::Text(text.into())])
    }

    /// An assistant message with one text part.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, vec![ContentPart::Text(text.into())])
    }

    /// Appends an image part (builder style).
    pub fn with_image(mut self, image: ImagePart) -> Self {
        self.parts.push(ContentPart::Image(image));
        self
    }

    /// The text parts joined with newlines (images ignored).
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .parts
            .iter()
            .filter_map(|p| match p {
                ContentPart::Text(t) => Some(t.as_str()),
                ContentPart::Image(_) => None,
            })
            .collect();
        texts.join("\n")
    }
}
