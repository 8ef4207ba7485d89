//! Looking at the console in Chromium: waiting for what a view shows, whether something is
//! rendered, whether the page fits the screen, signing in, and the contrast of what is
//! shown (`tests/console.rs`, `tests/console_memory.rs`).

use std::time::Duration;

use ghost_testkit::testing::eventually;
use serde_json::{json, Value};

use super::webdriver::Browser;
use super::TOKEN;

/// How long any one thing may take to show in the page (a hang guard, not a measurement).
pub const PATIENCE: Duration = Duration::from_secs(60);

/// A phone's viewport, and a desktop's.
pub const PHONE: (u32, u32) = (390, 844);
/// A desktop's viewport.
pub const DESKTOP: (u32, u32) = (1280, 800);

/// Both widths, named for screenshots.
pub const WIDTHS: [(&str, (u32, u32)); 2] = [("phone", PHONE), ("desktop", DESKTOP)];

/// Waits until `css` matches an element whose text satisfies `check`; returns that text.
pub async fn text_of(browser: &Browser, css: &str, check: impl Fn(&str) -> bool) -> String {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        if let Some(element) = browser.find(css).await {
            if let Some(text) = browser.text(&element).await {
                if check(&text) {
                    return text;
                }
            }
        }
        if tokio::time::Instant::now() > deadline {
            let page = browser.source().await;
            panic!("{css} never showed the expected text; page:\n{page}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The texts of every element `css` matches.
pub async fn texts(browser: &Browser, css: &str) -> Vec<String> {
    let mut out = Vec::new();
    for element in browser.find_all(css).await {
        out.push(browser.text(&element).await.unwrap_or_default());
    }
    out
}

/// Waits until `css` matches exactly `n` elements; their texts.
pub async fn n_texts(browser: &Browser, css: &str, n: usize) -> Vec<String> {
    eventually(PATIENCE, css, || async {
        let t = texts(browser, css).await;
        (t.len() == n).then_some(t)
    })
    .await
}

/// Runs `expression` (JavaScript) in the page.
pub async fn js(browser: &Browser, expression: &str) -> Value {
    browser.js(expression).await
}

/// Waits until `expression` (JavaScript) gives something `check` takes; returns it.
pub async fn until(
    browser: &Browser,
    what: &str,
    expression: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let v = browser.js(expression).await;
        if check(&v) {
            return v;
        }
        if tokio::time::Instant::now() > deadline {
            let page = browser.source().await;
            panic!("{what}: last {v}; page:\n{page}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Whether `css` matches an element that is rendered (not hidden, nor inside something
/// hidden).
pub async fn shown(browser: &Browser, css: &str) -> bool {
    let css = json!(css);
    js(
        browser,
        &format!("(e => !!e && e.getClientRects().length > 0)(document.querySelector({css}))"),
    )
    .await
        == json!(true)
}

/// How far below the bottom of the element with id `field` the top of the one with id
/// `error` is drawn, in px (a problem is said beside the field it is about).
pub async fn gap_below(browser: &Browser, error: &str, field: &str) -> f64 {
    let (error, field) = (json!(error), json!(field));
    let gap = js(
        browser,
        &format!(
            "document.getElementById({error}).getBoundingClientRect().top - document.getElementById({field}).getBoundingClientRect().bottom"
        ),
    )
    .await;
    gap.as_f64().unwrap_or(f64::MAX)
}

/// Waits until the page's address ends with `hash`.
pub async fn at(browser: &Browser, hash: &str) {
    eventually(PATIENCE, hash, || async {
        browser.url().await.ends_with(hash).then_some(())
    })
    .await;
}

/// Saves a screenshot (after fonts and layout settle).
pub async fn screenshot(browser: &Browser, name: &str) {
    browser.save_screenshot(name).await;
}

/// Nothing is wider than the screen (no sideways scrolling), and the page itself does not
/// scroll: each view scrolls inside itself, the tabs and the composer stay in view.
pub async fn fits_the_screen(browser: &Browser, view: &str) {
    let sizes = js(
        browser,
        "[document.documentElement.scrollWidth, window.innerWidth, document.documentElement.scrollHeight, window.innerHeight]",
    )
    .await;
    let n = |i: usize| sizes[i].as_f64().unwrap();
    assert!(
        n(0) <= n(1),
        "{view}: page is {}px wide on a {}px screen",
        n(0),
        n(1)
    );
    assert!(
        n(2) <= n(3),
        "{view}: page is {}px tall on a {}px screen",
        n(2),
        n(3)
    );
}

/// Opens the console at `hash` and signs in with the test token; waits until it is live.
pub async fn sign_in(browser: &Browser, base_url: &str, hash: &str) {
    browser.goto(&format!("{base_url}/console/{hash}")).await;
    browser.fill("#signin-token", TOKEN).await;
    browser.click("#signin-submit").await;
    text_of(browser, "#events-status", |t| t == "Live").await;
}

/// The lowest contrast ratio (WCAG) of the text of every rendered element `css` matches
/// against the background it is drawn on (the nearest ancestor's that is not transparent),
/// with the element's text, for the message.
pub async fn lowest_contrast(browser: &Browser, css: &str) -> (f64, String) {
    let css = json!(css);
    let answer = js(
        browser,
        &format!(
            r#"(() => {{
  const rgb = (c) => (c.match(/[\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map((v) => {{ v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }})
    .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
  const background = (e) => {{
    for (; e; e = e.parentElement) {{
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length >= 3 && (c.length < 4 || c[3] > 0)) return c;
    }}
    return rgb(getComputedStyle(document.documentElement).backgroundColor);
  }};
  let worst = [99, ""];
  for (const e of document.querySelectorAll({css})) {{
    if (!e.getClientRects().length || !e.textContent.trim()) continue;
    const [a, b] = [lum(rgb(getComputedStyle(e).color)), lum(background(e))];
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    if (ratio < worst[0]) worst = [ratio, e.textContent.trim().slice(0, 60)];
  }}
  return worst;
}})()"#
        ),
    )
    .await;
    (
        answer[0].as_f64().unwrap_or(0.0),
        answer[1].as_str().unwrap_or_default().to_owned(),
    )
}
