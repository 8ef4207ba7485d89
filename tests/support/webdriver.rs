//! A small W3C WebDriver client over reqwest, enough to drive the console in Chromium
//! through chromedriver: sessions, navigation, elements (CSS), typing, clicks, scripts and
//! screenshots. (A WebDriver crate would bring a second HTTP stack whose features rebuild
//! llama.cpp; the protocol here is a dozen JSON calls.)

use std::process::Stdio;
use std::time::Duration;

use base64::Engine;
use serde_json::{json, Value};

/// WebDriver's Enter, Shift and Control keys.
pub const ENTER: &str = "\u{E007}";
/// Shift.
pub const SHIFT: &str = "\u{E008}";
/// Control.
pub const CONTROL: &str = "\u{E009}";
/// Escape.
pub const ESCAPE: &str = "\u{E00C}";

/// The key under which WebDriver returns an element reference.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Where the browser tests keep their screenshots: `target/console-screenshots/`.
pub fn screenshot_dir() -> std::path::PathBuf {
    let dir =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/console-screenshots");
    std::fs::create_dir_all(&dir).expect("screenshot directory");
    dir
}

/// A chromedriver on a free port, killed when dropped.
pub struct Driver {
    child: tokio::process::Child,
    url: String,
}

impl Driver {
    /// Starts `chromedriver` (Debian package chromium-driver) and waits until it is ready.
    pub async fn start() -> Driver {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let child = tokio::process::Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect(
                "chromedriver (Debian package chromium-driver; deploy/test-tools.sh installs it)",
            );
        let url = format!("http://127.0.0.1:{port}");
        let status = format!("{url}/status");
        ghost_testkit::testing::eventually(
            Duration::from_secs(60),
            "chromedriver ready",
            || async {
                let v: Value = reqwest::get(&status).await.ok()?.json().await.ok()?;
                (v["value"]["ready"] == true).then_some(())
            },
        )
        .await;
        Driver { child, url }
    }

    /// A headless Chromium session with a `width` × `height` window, keeping the page's
    /// console messages for [`Browser::console_log`].
    pub async fn browser(&self, width: u32, height: u32) -> Browser {
        let http = reqwest::Client::new();
        let mut options = json!({
            "binary": "/usr/bin/chromium",
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", format!("--window-size={width},{height}"),
                     "--lang=ja"]
        });
        // A window is at least 500 px wide: a phone's viewport is emulated.
        if width < 500 {
            options["mobileEmulation"] = json!({ "deviceMetrics": {
                "width": width, "height": height, "pixelRatio": 1.0, "touch": true, "mobile": true
            }});
        }
        let caps = json!({ "capabilities": { "alwaysMatch": {
            "browserName": "chrome",
            "goog:loggingPrefs": { "browser": "ALL" },
            "goog:chromeOptions": options
        }}});
        let answer: Value = http
            .post(format!("{}/session", self.url))
            .json(&caps)
            .send()
            .await
            .expect("new session")
            .json()
            .await
            .expect("new session JSON");
        let id = answer["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no Chromium session: {answer}"))
            .to_owned();
        Browser {
            http,
            base: format!("{}/session/{id}", self.url),
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// One browser session.
pub struct Browser {
    http: reqwest::Client,
    base: String,
}

impl Browser {
    /// A command; the answer's `value`, or the WebDriver error as `Err`.
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, String> {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.map_err(|e| e.to_string())?;
        let ok = response.status().is_success();
        let answer: Value = response.json().await.map_err(|e| e.to_string())?;
        if ok {
            Ok(answer["value"].clone())
        } else {
            Err(answer["value"].to_string())
        }
    }

    async fn post(&self, path: &str, body: Value) -> Result<Value, String> {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    async fn get(&self, path: &str) -> Result<Value, String> {
        self.call(reqwest::Method::GET, path, None).await
    }

    /// Opens `url`.
    pub async fn goto(&self, url: &str) {
        self.post("/url", json!({ "url": url }))
            .await
            .expect("navigate");
    }

    /// Reloads the page.
    pub async fn refresh(&self) {
        self.post("/refresh", json!({})).await.expect("refresh");
    }

    /// The first element `css` matches, if any.
    pub async fn find(&self, css: &str) -> Option<String> {
        let v = self
            .post("/element", json!({ "using": "css selector", "value": css }))
            .await
            .ok()?;
        v[ELEMENT].as_str().map(str::to_owned)
    }

    /// Every element `css` matches.
    pub async fn find_all(&self, css: &str) -> Vec<String> {
        let v = self
            .post(
                "/elements",
                json!({ "using": "css selector", "value": css }),
            )
            .await
            .expect("find elements");
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|e| e[ELEMENT].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// An element's visible text.
    pub async fn text(&self, element: &str) -> Option<String> {
        let v = self.get(&format!("/element/{element}/text")).await.ok()?;
        v.as_str().map(str::to_owned)
    }

    /// An element's attribute.
    pub async fn attr(&self, element: &str, name: &str) -> Option<String> {
        let v = self
            .get(&format!("/element/{element}/attribute/{name}"))
            .await
            .ok()?;
        v.as_str().map(str::to_owned)
    }

    /// Clicks the element `css` matches.
    pub async fn click(&self, css: &str) {
        let element = self.find(css).await.unwrap_or_else(|| panic!("no {css}"));
        self.post(&format!("/element/{element}/click"), json!({}))
            .await
            .unwrap_or_else(|e| panic!("click {css}: {e}"));
    }

    /// Clears the field `css` matches and types `text` into it (waiting, within a minute,
    /// for the field to be shown: a view may still be switching).
    pub async fn fill(&self, css: &str, text: &str) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        let element = loop {
            let element = self.find(css).await.unwrap_or_else(|| panic!("no {css}"));
            match self
                .post(&format!("/element/{element}/clear"), json!({}))
                .await
            {
                Ok(_) => break element,
                Err(e)
                    if e.contains("not interactable") && tokio::time::Instant::now() < deadline =>
                {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("clear {css}: {e}"),
            }
        };
        self.type_into_element(&element, css, text).await;
    }

    /// Types `text` into the field `css` matches, after what it holds (WebDriver key codes
    /// such as [`ENTER`] included).
    pub async fn type_into(&self, css: &str, text: &str) {
        let element = self.find(css).await.unwrap_or_else(|| panic!("no {css}"));
        self.type_into_element(&element, css, text).await;
    }

    async fn type_into_element(&self, element: &str, css: &str, text: &str) {
        self.post(
            &format!("/element/{element}/value"),
            json!({ "text": text }),
        )
        .await
        .unwrap_or_else(|e| panic!("type into {css}: {e}"));
    }

    /// Presses keys (WebDriver actions): `chord` held together, in order, then released.
    pub async fn press(&self, chord: &[&str]) {
        let mut actions: Vec<Value> = chord
            .iter()
            .map(|k| json!({ "type": "keyDown", "value": k }))
            .collect();
        actions.extend(
            chord
                .iter()
                .rev()
                .map(|k| json!({ "type": "keyUp", "value": k })),
        );
        self.post(
            "/actions",
            json!({ "actions": [{ "type": "key", "id": "keyboard", "actions": actions }] }),
        )
        .await
        .expect("key actions");
        let _ = self.call(reqwest::Method::DELETE, "/actions", None).await;
    }

    /// The page's address.
    pub async fn url(&self) -> String {
        self.get_string("/url").await
    }

    /// A command's string answer ("" when it fails).
    async fn get_string(&self, path: &str) -> String {
        self.get(path)
            .await
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    }

    /// What the page logged to its console since the last call (errors, warnings, network
    /// failures, `console.*` calls), as `LEVEL source: message` lines.
    pub async fn console_log(&self) -> Vec<String> {
        let entries = self
            .post("/se/log", json!({ "type": "browser" }))
            .await
            .expect("browser log (goog:loggingPrefs)");
        entries
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|e| format!("{} {}: {}", e["level"], e["source"], e["message"]))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Runs `script` in the page and returns its result.
    pub async fn execute(&self, script: &str) -> Value {
        self.post("/execute/sync", json!({ "script": script, "args": [] }))
            .await
            .expect("execute script")
    }

    /// The page's HTML (for failure messages).
    pub async fn source(&self) -> String {
        self.get_string("/source").await
    }

    /// A PNG of the window.
    pub async fn screenshot(&self) -> Vec<u8> {
        let v = self.get("/screenshot").await.expect("screenshot");
        base64::engine::general_purpose::STANDARD
            .decode(v.as_str().expect("base64 PNG"))
            .expect("PNG bytes")
    }

    /// Saves a PNG of the window as `target/console-screenshots/<name>.png` (kept as a test
    /// artefact), once fonts and layout have settled.
    pub async fn save_screenshot(&self, name: &str) {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let png = self.screenshot().await;
        std::fs::write(screenshot_dir().join(format!("{name}.png")), png).expect("save screenshot");
    }

    /// The value of `expression` (JavaScript) in the page.
    pub async fn js(&self, expression: &str) -> Value {
        self.execute(&format!("return {expression};")).await
    }

    /// The browser's console log is empty: no error, no warning, no failed request.
    pub async fn assert_quiet(&self, when: &str) {
        let log = self.console_log().await;
        assert!(
            log.is_empty(),
            "{when}: the browser logged:\n{}",
            log.join("\n")
        );
    }

    /// Makes the page see the browser's colour preference as `scheme` (`dark`, `light`),
    /// through Chromium's DevTools protocol (`Emulation.setEmulatedMedia`).
    pub async fn prefer_color_scheme(&self, scheme: &str) {
        let features = json!([{ "name": "prefers-color-scheme", "value": scheme }]);
        self.post(
            "/goog/cdp/execute",
            json!({ "cmd": "Emulation.setEmulatedMedia", "params": { "features": features } }),
        )
        .await
        .expect("emulated colour scheme");
    }

    /// Ends the session (closes the browser).
    pub async fn close(self) {
        let _ = self.call(reqwest::Method::DELETE, "", None).await;
    }
}
