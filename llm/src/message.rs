//! Provider-neutral chat messages.

use std::path::PathBuf;
use std::sync::Arc;

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

/// An image attached to a message. `url` wins when present; otherwise the `source` is read
/// and inlined as a data URI.
#[derive(Debug, Clone, Default)]
pub struct ImagePart {
    /// A `data:` URI or an `http(s)://` URL, sent as is.
    pub url: Option<String>,
    /// Where the bytes come from (a file, the media store), audited before and after the call.
    pub source: Option<Arc<dyn ImageSource>>,
}

impl PartialEq for ImagePart {
    fn eq(&self, other: &Self) -> bool {
        self.url == other.url
            && self.source.as_ref().map(|s| s.label()) == other.source.as_ref().map(|s| s.label())
    }
}

impl Eq for ImagePart {}

impl ImagePart {
    /// Image given by URL (data URI or http URL).
    pub fn from_url(url: impl Into<String>) -> Self {
        ImagePart {
            url: Some(url.into()),
            source: None,
        }
    }

    /// Image given by a local file, inlined at request time.
    pub fn from_path(path: impl Into<PathBuf>) -> Self {
        Self::from_source(Arc::new(FileImage(path.into())))
    }

    /// Image whose bytes `source` gives at request time.
    pub fn from_source(source: Arc<dyn ImageSource>) -> Self {
        ImagePart {
            url: None,
            source: Some(source),
        }
    }
}

/// Where an image's bytes come from when no URL is given: read at request time, and looked
/// at again for the image audit (seed 002) before the call and after a timeout.
#[async_trait::async_trait]
pub trait ImageSource: Send + Sync + std::fmt::Debug {
    /// What the audit calls it (`source_path`): a file path, or `media:<id>`.
    fn label(&self) -> String;

    /// The bytes and, if known, their MIME type; `Err` is the audit's `drop_reason`
    /// (e.g. `file_not_found`, `media_not_found`).
    async fn load(&self) -> Result<(Vec<u8>, Option<String>), &'static str>;

    /// Whether it exists now and its size in bytes (`(false, 0)` when absent).
    async fn stat(&self) -> (bool, u64);
}

/// An image in a file on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileImage(pub PathBuf);

#[async_trait::async_trait]
impl ImageSource for FileImage {
    fn label(&self) -> String {
        self.0.display().to_string()
    }

    async fn load(&self) -> Result<(Vec<u8>, Option<String>), &'static str> {
        match tokio::fs::read(&self.0).await {
            Ok(bytes) => Ok((
                bytes,
                super::image::mime_from_extension(&self.0).map(str::to_owned),
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err("file_not_found"),
            Err(_) => Err("file_unreadable"),
        }
    }

    async fn stat(&self) -> (bool, u64) {
        match tokio::fs::metadata(&self.0).await {
            Ok(m) => (true, m.len()),
            Err(_) => (false, 0),
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
