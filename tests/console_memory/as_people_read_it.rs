//! Memory as people read it (issue 48 items 3 and 7 to 10), through the write-plan service
//! with a fake worker writing the plans, a fake LINE knowing its user's profile name, and
//! the console in Chromium at both widths:
//!
//! - evidence is the words it came from, who said them and when, with a link that opens the
//!   conversation at that message; people are shown by name: "you" for the console's own
//!   person, a LINE user by their LINE display name (`GET /api/memory`'s `evidence` and
//!   `people`, checked over HTTP too);
//! - a fact filed twice from two messages is one memory with both pieces of evidence
//!   (`duplicates`; the write plan is left as it is);
//! - Correct: the editor takes the buttons' place, Escape cancels, the card stays where it
//!   was, its earlier revision behind "history", and the note says "Done." once the list
//!   shows the change;
//! - Flip: one entry that changes in place, what it was behind "history", "Done." when shown.

use ghost::stack::ServiceName;
use ghost_testkit::fake_llm::{RecordedRequest, Script};
use ghost_testkit::testing::WORKER_MODEL;
use serde_json::{json, Value};

use crate::support::console::{fits_the_screen, screenshot, sign_in, until, PATIENCE, WIDTHS};
use crate::support::plans::write_plan;
use crate::support::platforms::{line_text, ChannelApp};
use crate::support::webdriver::{Browser, Driver, ESCAPE};
use crate::support::NEUTRAL_AFFECT;
use crate::{memory, texts_js};

/// Empties the note (so "Done." can only be the next change's).
async fn no_note(browser: &Browser) {
    browser
        .js("(document.getElementById('memory-note').textContent = '', true)")
        .await;
}

/// Waits until the note says the change is shown.
async fn done(browser: &Browser) {
    let note = "document.getElementById('memory-note').textContent";
    until(browser, "Done.", note, |v| v == "Done.").await;
}

const SOUP: &str = "Makes celery soup every week";
const CORRECTED: &str = "Makes celery soup every Sunday";
const KYOTO: &str = "マスターは京都に住んでいる";
const TENNIS: &str = "Plays tennis on Sundays";
const ALICE: &str = "Ualice0001";

/// The fake worker: each message's plan by its words; anything else calm.
fn answer(r: &RecordedRequest) -> Script {
    let system = r.system_text().unwrap_or_default();
    if !system.contains("long-term memory") {
        return match r.model.as_deref() {
            Some(WORKER_MODEL) => Script::reply(NEUTRAL_AFFECT),
            _ => Script::reply("Noted."),
        };
    }
    let input = r.last_user_json();
    // What a memory rests on: the person's message, and the turn it is planned for (the
    // reply; a plan must cite it).
    let current = json!([input["turn"]["user_event_id"], input["current_event_id"]]);
    let text = input["turn"]["user_text"].as_str().unwrap_or_default();
    let state = |body: &str| {
        json!({"kind": "fact", "op": "upsert", "about": "speaker", "body_text": body,
               "confidence": 0.9, "evidence_event_ids": current, "reason": "said so"})
    };
    let like = |domain: &str, subject: &str| {
        json!({"op": "confirm", "domain": domain, "polarity": "like", "subject": subject,
               "confidence": 0.9, "evidence_event_ids": current, "reason": "said so"})
    };
    let (states, preferences) = if text.contains("love celery") {
        (json!([state(SOUP)]), json!([like("food", "celery")]))
    } else if text.contains("京都") {
        // Said twice, filed twice: the second time with a full stop.
        let body = if text.starts_with("実は") {
            format!("{KYOTO}。")
        } else {
            KYOTO.to_owned()
        };
        (json!([state(&body)]), json!([]))
    } else if text.contains("tennis") {
        (json!([state(TENNIS)]), json!([like("topic", "tennis")]))
    } else {
        (json!([]), json!([]))
    };
    Script::reply(&write_plan(states, preferences, "life", "observe").to_string())
}

/// The one state card whose body starts with `body`: its selector (by its first state's id;
/// of states that are one memory, the first remembered speaks for them).
async fn card_of(browser: &Browser, body: &str) -> String {
    let id = until(
        browser,
        body,
        &format!(
            "[...document.querySelectorAll('#memory-states-list > li')].filter(li => li.querySelector('.body')?.textContent.startsWith({})).map(li => li.dataset.stateId)",
            json!(body)
        ),
        |v| v.as_array().is_some_and(|a| a.len() == 1),
    )
    .await;
    format!(
        "#memory-states-list > li[data-state-id='{}']",
        id[0].as_str().unwrap()
    )
}

/// Where a card is in its list.
async fn place(browser: &Browser, card: &str) -> Value {
    browser
        .js(&format!(
            "[...document.querySelectorAll('#memory-states-list > li')].indexOf(document.querySelector({}))",
            json!(card)
        ))
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_reads_as_people_read_it_at_a_phone_and_a_desktop() {
    let mut services = ServiceName::ALL.to_vec();
    services.push(ServiceName::WritePlan);
    let channels = ChannelApp::spawn_services(&services, &[]).await;
    channels.line.set_profile(ALICE, "Alice");
    let app = &channels.app;
    app.llm.set_responder(answer);

    app.chat("memory-people", "I love celery").await;
    app.chat("memory-people", "京都に住んでいます").await;
    app.chat("memory-people", "実は京都に住んでるんだ").await;
    let tennis = line_text(
        "ev-alice",
        ALICE,
        "I play tennis on Sundays",
        "rt-alice",
        false,
    );
    assert_eq!(channels.post_line_signed(&tennis).await, 200);
    // Four turns' plans (a hang guard, twice a view's: a loaded machine is slow to plan).
    let deadline = tokio::time::Instant::now() + PATIENCE * 2;
    let remembered = loop {
        let m = memory(app).await;
        let n = |k: &str| m[k].as_array().map_or(0, Vec::len);
        if n("states") == 4 && n("preferences") == 2 {
            break m;
        }
        if tokio::time::Instant::now() > deadline {
            let kinds: Vec<(String, i64)> =
                sqlx::query_as("SELECT event_type, count(*) FROM events GROUP BY 1 ORDER BY 1")
                    .fetch_all(app.store.pool())
                    .await
                    .unwrap_or_default();
            panic!("the plans were not applied: {m}\nevents: {kinds:?}");
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };

    // Over HTTP: the duplicates, the evidence in words, the people by name.
    let states = remembered["states"].as_array().unwrap();
    let id_of = |prefix: &str| -> Vec<Value> {
        states
            .iter()
            .filter(|s| s["body_text"].as_str().unwrap().starts_with(prefix))
            .map(|s| s["state_id"].clone())
            .collect()
    };
    assert_eq!(
        remembered["duplicates"],
        json!([id_of(KYOTO)]),
        "{remembered}"
    );
    let soup = states.iter().find(|s| s["body_text"] == SOUP).unwrap();
    let evidence = |i: usize| {
        let id = soup["evidence_event_ids"][i].as_str().unwrap();
        remembered["evidence"][id].clone()
    };
    let said = evidence(0);
    assert_eq!(said["event_type"], "UserMessageReceived");
    let reply = evidence(1);
    assert_eq!(reply["event_type"], "AssistantReplied");
    assert_eq!(
        (
            &reply["said"]["role"],
            &reply["said"]["speaker"],
            &reply["said"]["text"]
        ),
        (&json!("assistant"), &json!("kuro"), &json!("Noted."))
    );
    assert_eq!(said["said"]["text"], "I love celery");
    assert_eq!(said["said"]["speaker"], "user");
    assert_eq!(said["said"]["session_id"], "memory-people");
    assert_eq!(
        remembered["people"]["user"],
        json!({"name": "you", "channel": "http", "you": true})
    );
    assert_eq!(
        remembered["people"][ALICE],
        json!({"name": "Alice", "channel": "line", "you": false})
    );
    let tennis_key = format!("{ALICE}/topic/tennis/like");
    assert_eq!(
        remembered["preference_evidence"][&tennis_key]
            .as_array()
            .map(Vec::len),
        Some(2),
        "{remembered}"
    );

    let driver = Driver::start().await;
    for (width, (w, h)) in WIDTHS {
        let browser = driver.browser(w, h).await;
        sign_in(&browser, &app.base_url, "#/memory").await;

        // One memory for the fact said twice, with both messages as its evidence.
        let kyoto = card_of(&browser, KYOTO).await;
        let cards = browser
            .js("[...document.querySelectorAll('#memory-states-list .body')].filter(b => b.textContent.includes('京都')).length")
            .await;
        assert_eq!(cards, 1, "one memory for the fact said twice");
        let words = browser
            .js(&texts_js(&format!(
                "{kyoto} .evidence li[data-role=user] q"
            )))
            .await;
        let mut words: Vec<String> = serde_json::from_value(words).unwrap();
        words.sort();
        assert_eq!(words, ["京都に住んでいます", "実は京都に住んでるんだ"]);
        let meta = browser.js(&texts_js(&format!("{kyoto} .meta"))).await;
        assert!(meta[0].as_str().unwrap().contains("about you"), "{meta}");

        // Alice by her LINE name; her words, hers.
        let tennis = card_of(&browser, TENNIS).await;
        let meta = browser.js(&texts_js(&format!("{tennis} .meta"))).await;
        assert!(meta[0].as_str().unwrap().contains("about Alice"), "{meta}");
        let who = browser
            .js(&texts_js(&format!("{tennis} .evidence .who")))
            .await;
        assert_eq!(who, json!(["Alice", "クロ"]));
        let persons = browser
            .js("[...document.querySelectorAll('#memory-person option')].map(o => o.value + '=' + o.textContent)")
            .await;
        assert_eq!(
            persons,
            json!(["=everyone", format!("{ALICE}=Alice (LINE)"), "user=you"])
        );
        let shown = browser
            .js("[...document.querySelectorAll('#memory-states-list .body, #memory-states-list .meta, #memory-states-list .evidence, #memory-preferences-list .body')].map(e => e.textContent).join(' ')")
            .await;
        assert!(
            !shown.as_str().unwrap().contains(ALICE),
            "an id shown: {shown}"
        );
        fits_the_screen(&browser, "memory").await;
        screenshot(&browser, &format!("{width}-memory-people")).await;

        if width == "desktop" {
            edits(&browser, &app.base_url).await;
        }
        browser.assert_quiet(width).await;
        browser.close().await;
    }
    drop(driver);
    channels.cleanup().await;
}

/// Correcting and flipping, then the evidence's link to its message.
async fn edits(browser: &Browser, base_url: &str) {
    // Correct: the editor takes the buttons' place; Escape puts them back unchanged.
    let soup = card_of(browser, SOUP).await;
    let was = place(browser, &soup).await;
    browser.click(&format!("{soup} button.correct")).await;
    let buttons = browser
        .js(&format!(
            "[...document.querySelectorAll({})].filter(b => b.getClientRects().length).map(b => b.textContent)",
            json!(format!("{soup} button"))
        ))
        .await;
    assert_eq!(
        buttons,
        json!(["Save", "Cancel"]),
        "the editor in the buttons' place"
    );
    browser
        .type_into(&format!("{soup} textarea.edit-body"), " and more")
        .await;
    browser
        .type_into(&format!("{soup} textarea.edit-body"), ESCAPE)
        .await;
    until(
        browser,
        "the editor gone",
        &texts_js(&format!("{soup} .body")),
        |v| v == &json!([SOUP]),
    )
    .await;
    assert_eq!(
        browser.js(&texts_js(&format!("{soup} textarea"))).await,
        json!([])
    );
    assert_eq!(
        browser
            .js(&texts_js(&format!("{soup} button.correct")))
            .await,
        json!(["Correct"])
    );

    // Corrected: "Done." once the list shows it, in the same place, the old words in history.
    browser.click(&format!("{soup} button.correct")).await;
    browser
        .fill(&format!("{soup} textarea.edit-body"), CORRECTED)
        .await;
    no_note(browser).await;
    browser.click(&format!("{soup} button.save")).await;
    done(browser).await;
    let card = card_of(browser, CORRECTED).await;
    assert_eq!(
        place(browser, &card).await,
        was,
        "the card stays where it was"
    );
    let history = browser
        .js(&texts_js(&format!("{card} details.history li")))
        .await;
    assert_eq!(history, json!([format!("revision 1 (active): {SOUP}")]));
    screenshot(browser, "desktop-memory-corrected").await;

    // Flip: the same entry, the other way round; what it was behind "history".
    let like = "#memory-preferences-list li[data-person='user']";
    no_note(browser).await;
    browser.click(&format!("{like} button.flip")).await;
    done(browser).await;
    until(
        browser,
        "one entry, flipped",
        &texts_js(&format!("{like} .body")),
        |v| v == &json!(["you · dislike celery"]),
    )
    .await;
    assert_eq!(
        browser.js(&texts_js(&format!("{like} button.flip"))).await,
        json!(["Flip to like"])
    );
    assert_eq!(
        browser
            .js(&texts_js(&format!("{like} details.history li")))
            .await,
        json!(["like celery (revoked)"])
    );
    screenshot(browser, "desktop-memory-flipped").await;

    // The evidence opens its conversation at the message.
    let card = card_of(browser, CORRECTED).await;
    browser
        .click(&format!(
            "{card} .evidence li[data-role=user] a.open-message"
        ))
        .await;
    until(
        browser,
        "the message marked",
        &texts_js("#chat-log li.target .text"),
        |v| v == &json!(["I love celery"]),
    )
    .await;
    let at = browser.url().await;
    assert!(
        at.starts_with(&format!("{base_url}/console/#/chat/memory-people/")),
        "{at}"
    );
}
