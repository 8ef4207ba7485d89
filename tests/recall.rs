//! Recall end to end (issue 12): a memory the write plan stored in one session is recalled
//! in a later one and reaches the reply prompt (and a reply that starts copying it is asked
//! again without it); the selection carries the persona; two
//! personas with different interest states rank the same candidates differently.

mod support;

use std::time::Duration;

use ghost::stack::ServiceName;
use ghost_persona::recall::collect::{collect, Scope};
use ghost_shared::envelope::EventPayload;
use ghost_shared::events::{persona_stream, AssistantReplied, RecallPerformed};
use ghost_shared::memory::model::{AttentionTarget, InterestState};
use ghost_shared::memory::retrieval::{focus_hint, retrieval_plan, RetrievalLimits};
use ghost_shared::memory::vocab::{InteractionMode, TargetType};
use ghost_shared::memory::Memory;
use ghost_testkit::fake_llm::{RecordedRequest, Script};
use ghost_testkit::testing::{eventually, TestEnv, WORKER_MODEL};
use serde_json::{json, Value};
use support::plans::{annotation, plan_input, planned, select_candidates, spawn_with_planner};
use support::{TestApp, NEUTRAL_AFFECT, TOKEN};

/// The fake worker: write plans store a fact about green peppers; the selection picks the
/// candidates that mention them.
fn answer(r: &RecordedRequest) -> Script {
    let system = r.system_text().unwrap_or_default();
    let input = r.last_user_json();
    if system.contains("long-term memory") {
        let current = input["current_event_id"].clone();
        let text = input["turn"]["user_text"].as_str().unwrap_or_default();
        let states = if text.contains("green peppers") {
            json!([{"kind": "fact", "op": "upsert", "body_text": "マスターはピーマンが大好きだ",
                    "confidence": 0.9, "evidence_event_ids": [current], "reason": "本人が言った"}])
        } else {
            json!([])
        };
        return Script::reply(&json!({"state_updates": states}).to_string());
    }
    let peppers = |c: &Value| {
        c["text"].as_str().unwrap_or_default().contains("ピーマン")
            && c["source"].as_str().unwrap_or_default().ends_with("states")
    };
    if let Some(selection) = select_candidates(r, peppers) {
        return selection;
    }
    if r.model.as_deref() == Some(WORKER_MODEL) {
        Script::reply(NEUTRAL_AFFECT)
    } else {
        Script::reply("ok")
    }
}

/// The `RecallPerformed` of the reply in `session`, once it is recorded.
async fn recall_of(app: &TestApp, session: &str) -> RecallPerformed {
    let recall = eventually(Duration::from_secs(10), "RecallPerformed", || async {
        let events = app
            .store
            .read_stream(&persona_stream("kuro"), 0)
            .await
            .unwrap();
        events.into_iter().find(|e| {
            e.event_type == RecallPerformed::EVENT_TYPE && e.payload["session_id"] == session
        })
    })
    .await;
    recall.decode().unwrap()
}

#[tokio::test]
async fn a_memory_from_one_session_is_recalled_in_a_later_one() {
    let mut services = ServiceName::ALL.to_vec();
    services.push(ServiceName::WritePlan);
    let app = TestApp::spawn_services(&services, &[("GHOST_MEMORY__RECALL_ENABLED", "true")]).await;
    app.llm.set_responder(answer);

    app.reply(Script::reply("覚えておきますね。"));
    app.chat("recall-a", "I like green peppers a lot").await;
    // The plan's annotation is its last event: once its row is projected, so is the state.
    eventually(Duration::from_secs(30), "the plan applied", || async {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM memory_event_annotations")
            .fetch_one(app.store.pool())
            .await
            .unwrap();
        (n >= 1).then_some(())
    })
    .await;

    app.reply(Script::reply("もちろん、ピーマンですよね。"));
    let events = app
        .chat("recall-b", "ピーマンが大好きって話、覚えてる？")
        .await;
    let done = events.last().unwrap();
    assert_eq!(done.event, "done");

    // The reply prompt carried the memory, as data in the user's turn, never as a system
    // instruction.
    let last = app.persona_requests().pop().unwrap();
    let user = last.last_user_text().unwrap();
    let memory = ghost_shared::llm::Fence::data_of(&user, "MEMORY").unwrap_or_default();
    assert!(memory.contains("マスターはピーマンが大好きだ"), "{user}");
    assert!(
        !last
            .system_text()
            .unwrap()
            .contains("マスターはピーマンが大好きだ"),
        "a memory in a system message"
    );
    // The selection was asked as this persona.
    let selection = app
        .llm
        .requests()
        .into_iter()
        .rev()
        .find(|r| {
            r.system_text()
                .unwrap_or_default()
                .contains("Before you answer, you recall")
        })
        .expect("a selection request");
    let input: Value = serde_json::from_str(&selection.last_user_text().unwrap()).unwrap();
    let context = &input["persona_selection_context"];
    assert_eq!(context["second_person_label"], "マスター", "{input}");
    assert!(context["persona_text"].as_str().unwrap().contains("Kuro"));
    assert!(context.get("recent_vad_average").is_some() && context.get("interest_state").is_some());

    // The recall is recorded and inspectable by the reply's id.
    let reply_id = app
        .session_events("recall-b")
        .await
        .into_iter()
        .find(|e| e.event_type == AssistantReplied::EVENT_TYPE)
        .unwrap()
        .event_id;
    let r = recall_of(&app, "recall-b").await;
    assert_eq!(r.reply_event_id, reply_id);
    assert_eq!(
        r.selected_texts,
        vec!["(fact) マスターはピーマンが大好きだ".to_owned()]
    );
    assert!(
        r.candidate_counts["trigram_states"] >= 1,
        "{:?}",
        r.candidate_counts
    );
    assert!(r.timings_ms.contains_key("collection") && r.timings_ms.contains_key("selection"));

    let get = |path: String, token: Option<&'static str>| {
        let mut req = app.http.get(format!("{}{path}", app.base_url));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        async move {
            let resp = req.send().await.unwrap();
            (
                resp.status().as_u16(),
                resp.json::<Value>().await.unwrap_or(Value::Null),
            )
        }
    };
    let (status, body) = get(format!("/api/recalls/{reply_id}"), Some(TOKEN)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["recall"]["selected_ids"], json!(r.selected_ids));
    assert_eq!(get(format!("/api/recalls/{reply_id}"), None).await.0, 401);
    assert_eq!(
        get("/api/recalls/not-a-uuid".into(), Some(TOKEN)).await.0,
        400
    );
    assert_eq!(
        get(
            format!("/api/recalls/{}", uuid::Uuid::new_v4()),
            Some(TOKEN)
        )
        .await
        .0,
        404
    );

    // A model that begins its reply by copying the MEMORY block (SmolLM2 did, in the live
    // conversation) is asked once more without the blocks: the person gets a reply, and the
    // memories never come out as the persona's words.
    let asked = app.persona_requests().len();
    app.reply(Script::reply(
        "<<<MEMORY abcdefghijklmnop\n- (fact) マスターはピーマンが大好きだ",
    ));
    app.reply(Script::reply("ピーマンのことなら覚えていますよ。"));
    let events = app.chat("recall-c", "ピーマンの話、覚えてる？").await;
    let done = events.last().unwrap();
    assert_eq!(done.event, "done", "{events:#?}");
    assert_eq!(
        done.data["reply_text"],
        "ピーマンのことなら覚えていますよ。"
    );
    let requests = app.persona_requests();
    assert_eq!(requests.len(), asked + 2, "one ask again, no more");
    let first = requests[asked].last_user_text().unwrap();
    let again = requests[asked + 1].last_user_text().unwrap();
    assert!(first.contains("<<<MEMORY"), "{first}");
    assert!(
        !again.contains("<<<") && again.contains("ピーマンの話、覚えてる？"),
        "{again}"
    );
    app.cleanup().await;
}

#[tokio::test]
async fn an_unusable_selection_means_no_memories_and_the_reply_goes_on() {
    let app = TestApp::spawn(&[("GHOST_MEMORY__RECALL_ENABLED", "true")]).await;
    app.llm.set_responder(|r| {
        if r.system_text()
            .unwrap_or_default()
            .contains("Before you answer, you recall")
        {
            Script::reply("I think you mean the peppers! {\"selected_ids\": []}")
        } else if r.model.as_deref() == Some(WORKER_MODEL) {
            Script::reply(NEUTRAL_AFFECT)
        } else {
            Script::reply("ok")
        }
    });
    app.reply(Script::reply("はい。"));
    app.chat("sel-a", "earlier words to recall").await;
    app.reply(Script::reply("うん。"));
    let events = app.chat("sel-b", "earlier words").await;
    assert_eq!(events.last().unwrap().data["reply_text"], "うん。");
    let r = recall_of(&app, "sel-b").await;
    assert!(r.selected_ids.is_empty());
    assert!(r.selection_error.unwrap().contains("not {\"selected_ids\""));
    let user = app
        .persona_requests()
        .pop()
        .unwrap()
        .last_user_text()
        .unwrap();
    assert!(
        ghost_shared::llm::Fence::data_of(&user, "MEMORY").is_none(),
        "{user}"
    );
    app.cleanup().await;
}

/// One user utterance of session `old` at `position`, straight into `assistant_text`.
async fn say_in_old_session(pool: &sqlx::PgPool, position: i64, text: &str) {
    sqlx::query(
        "INSERT INTO assistant_text (session_id, position, event_id, role, speaker, source, text, recorded_at) \
         VALUES ('old', $1, $2, 'user', 'user', 'http', $3, now())",
    )
    .bind(position)
    .bind(uuid::Uuid::new_v4())
    .bind(text)
    .execute(pool)
    .await
    .unwrap();
}

fn interested_in(topic: &str) -> Memory {
    Memory {
        interest: Some(InterestState {
            attention_targets: vec![AttentionTarget {
                target_type: TargetType::Topic,
                value: topic.into(),
                weight: 0.9,
            }],
            interaction_mode: InteractionMode::Observe,
            updated_from_event_ids: Vec::new(),
            updated_at: 1_790_000_000.0,
        }),
        ..Memory::default()
    }
}

/// The fake worker: each plan annotates its turn by what the user said (by `annotate`);
/// the selection picks nothing.
fn annotating(annotate: fn(&str) -> Value) -> impl Fn(&RecordedRequest) -> Script {
    move |r| {
        if let Some(input) = plan_input(r) {
            let said = input["turn"]["user_text"].as_str().unwrap_or_default();
            return Script::reply(&annotate(said).to_string());
        }
        if r.system_text()
            .unwrap_or_default()
            .contains("Before you answer, you recall")
        {
            return Script::reply(r#"{"selected_ids": []}"#);
        }
        match r.model.as_deref() {
            Some(WORKER_MODEL) => Script::reply(NEUTRAL_AFFECT),
            _ => Script::reply("ok"),
        }
    }
}

/// The persona's replies of `session`, in order.
async fn replies(app: &TestApp, session: &str) -> Vec<String> {
    app.session_events(session)
        .await
        .into_iter()
        .filter(|e| e.event_type == AssistantReplied::EVENT_TYPE)
        .map(|e| format!("event:{}", e.event_id))
        .collect()
}

/// The topic bias matches what a write plan annotated, not the text (issue 34 item 17):
/// the walk is annotated 登山 and the cooking 料理 though neither reply names them, and the
/// newest line names 登山 but was annotated with something else. Two personas with
/// different interests rank the same candidates differently.
#[tokio::test]
async fn two_personas_with_different_interests_rank_the_same_candidates_differently() {
    let app = spawn_with_planner(&[]).await;
    app.llm.set_responder(annotating(|said| match said {
        "週末は山に行ったよ" => annotation(&["登山"], &[]),
        "週末は家で過ごした" => annotation(&[], &["料理"]),
        _ => annotation(&["テレビ"], &[]),
    }));
    for (i, said) in [
        "週末は山に行ったよ",
        "週末は家で過ごした",
        "登山の番組は退屈だった",
    ]
    .iter()
    .enumerate()
    {
        planned(&app, "old", said, i as i64 + 1).await;
    }
    let replies = replies(&app, "old").await;
    let limits = RetrievalLimits {
        max_candidates: 80,
        max_selected: 12,
    };
    let ranking = |persona: &'static str, topic: &'static str| {
        let store = app.store.clone();
        async move {
            let plan = retrieval_plan(
                "週末の話を覚えてる？",
                limits,
                focus_hint(&interested_in(topic), 1_790_000_000.0, 259_200.0),
            );
            let scope = Scope {
                persona,
                person: ghost_shared::memory::DEFAULT_PERSON,
                session_id: "now",
                history: Default::default(),
                source_timeout: Duration::from_secs(5),
                similarity_threshold: 0.1,
                embedding: None,
            };
            let collected = collect(store.pool(), scope, &plan).await;
            assert!(collected.skipped.is_empty(), "{:?}", collected.skipped);
            collected
                .candidates
                .into_iter()
                .map(|c| c.id)
                .collect::<Vec<_>>()
        }
    };
    let hiker = ranking("LUMINA", "登山").await;
    let cook = ranking("CLARIS", "料理").await;
    // The walk's reply above the cooking's for the hiker, the other way for the cook (the
    // users' own lines, which name the weekend, rank by their words for both).
    let place = |ranked: &[String], id: &String| ranked.iter().position(|c| c == id);
    assert!(
        place(&hiker, &replies[0]) < place(&hiker, &replies[1]),
        "{hiker:?}"
    );
    assert!(
        place(&cook, &replies[1]) < place(&cook, &replies[0]),
        "{cook:?}"
    );
    assert!(place(&hiker, &replies[0]).is_some() && place(&cook, &replies[1]).is_some());
    assert_ne!(hiker, cook);
    app.cleanup().await;
}

/// Style and avoid biases rank too, by annotation (issue 34 item 17): with a confirmed
/// like of the style やさしい言葉 and a dislike of ホラー (both from write plans), the
/// reply annotated with the style rises above a newer neutral one, and the one annotated
/// ホラー, the newest, falls below every utterance. The style annotation is what the write
/// plan's prompt asks for (issue 47 item 9): a `STYLE` entity named as the style
/// preference's subject.
#[tokio::test]
async fn style_and_avoid_biases_rank_what_was_annotated_with_them() {
    let app = spawn_with_planner(&[("GHOST_MEMORY__RECALL_ENABLED", "true")]).await;
    app.llm.set_responder(annotating(|said| match said {
        "やさしく話してね。ホラーは苦手。" => {
            let confirm = |domain: &str, polarity: &str, subject: &str| {
                json!({"op": "confirm", "domain": domain, "polarity": polarity,
                       "subject": subject, "confidence": 0.9,
                       "evidence_event_ids": ["e0"], "reason": "本人が言った"})
            };
            json!({"preference_updates": [confirm("style", "like", "やさしい言葉"),
                                          confirm("topic", "dislike", "ホラー")]})
        }
        "今日は疲れた" => {
            let mut styled = annotation(&[], &[]);
            styled["event_annotations"]["entities"] =
                json!([{"type": "STYLE", "name": "やさしい言葉", "confidence": 0.8}]);
            styled
        }
        "いい天気" => annotation(&["天気"], &[]),
        _ => annotation(&["ホラー"], &[]),
    }));
    let said = [
        "やさしく話してね。ホラーは苦手。",
        "今日は疲れた",
        "いい天気",
        "映画を見た",
    ];
    for (i, text) in said.iter().enumerate() {
        planned(&app, "old", text, i as i64 + 1).await;
    }
    let replies = replies(&app, "old").await;
    let (gentle, neutral, horror) = (&replies[1], &replies[2], &replies[3]);
    // The plan's prompt asks for the style a reply was spoken in, as a STYLE entity named
    // as the style preference's subject: what the style bias matches.
    let asked = app
        .llm
        .requests()
        .iter()
        .filter_map(|r| r.system_text())
        .find(|s| s.contains("long-term memory"))
        .expect("a write-plan request");
    assert!(
        asked.contains(r#""type": "STYLE""#) && asked.contains("style` preference's subject"),
        "{asked}"
    );
    app.chat("now", "最近どう？").await;
    let r = recall_of(&app, "now").await;
    assert_eq!(r.plan["focus"]["style_bias"], json!(["やさしい言葉"]));
    assert_eq!(r.plan["focus"]["avoid_bias"], json!(["ホラー"]));
    let at = |id: &String| {
        r.candidate_ids
            .iter()
            .position(|c| c == id)
            .unwrap_or_else(|| panic!("{id} in {:?}", r.candidate_ids))
    };
    assert!(at(gentle) < at(neutral), "{:?}", r.candidate_ids);
    let last_event = r
        .candidate_ids
        .iter()
        .rev()
        .find(|c| c.starts_with("event:"))
        .unwrap();
    assert_eq!(last_event, horror, "{:?}", r.candidate_ids);
    app.cleanup().await;
}

/// The memory said first in an old conversation, through the chat API, then enough newer
/// lines that recency alone does not reach it.
async fn say_memory_under_newer_lines(app: &TestApp, memory: &str) {
    let filler: Vec<String> = (0..25)
        .map(|i| format!("line {i} about the weather forecast"))
        .collect();
    for text in std::iter::once(memory.to_owned()).chain(filler) {
        app.reply(Script::reply("I see."));
        assert_eq!(app.chat("old", &text).await.last().unwrap().event, "done");
    }
}

#[tokio::test]
async fn a_memory_sharing_no_trigram_is_recalled_only_through_the_vector_source() {
    use ghost_shared::llm::{LlmClient, LlmRoleConfig, Provider};
    // The embedding projection embeds every line as it is said, on the fake model's
    // Ollama wire; recall is off, so nothing else ever embeds.
    let app = TestApp::spawn_adjusted(
        &ServiceName::ALL,
        &[("GHOST_MEMORY__RECALL_ENABLED", "false")],
        |config| {
            let mut role = config.ghost.llm["persona"].clone();
            role.model = "embed-fake".into();
            config.ghost.llm.insert("embedding".into(), role);
        },
    )
    .await;
    let base_url = app.llm.base_url();
    say_memory_under_newer_lines(&app, "Mochi is my tabby").await;
    let pool = app.store.pool().clone();
    eventually(Duration::from_secs(30), "every line embedded", || {
        let pool = pool.clone();
        async move {
            let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM memory_embeddings")
                .fetch_one(&pool)
                .await
                .ok()?;
            (stored == 2 * 26).then_some(())
        }
    })
    .await;
    let plan = retrieval_plan(
        "kitten?",
        RetrievalLimits {
            max_candidates: 80,
            max_selected: 12,
        },
        Default::default(),
    );
    let run = |embedding: Option<LlmClient>| {
        let (pool, plan) = (pool.clone(), plan.clone());
        async move {
            let scope = Scope {
                persona: "kuro",
                person: ghost_shared::memory::DEFAULT_PERSON,
                session_id: "now",
                history: Default::default(),
                source_timeout: Duration::from_secs(10),
                similarity_threshold: 0.1,
                embedding: embedding.as_ref(),
            };
            collect(&pool, scope, &plan).await
        }
    };

    // No embedding model: no vector source, and nothing else finds the memory.
    let off = run(None).await;
    assert!(!off.counts.contains_key("vector"), "{:?}", off.counts);
    assert!(off.candidates.iter().all(|c| !c.text.contains("tabby")));
    assert_eq!(off.counts["trigram_events"], 0);

    // Either wire format asks for the question's vector: the vector source alone finds it.
    let asked = app.llm.requests().len();
    for provider in [Provider::Ollama, Provider::Openai] {
        let cfg: LlmRoleConfig = serde_json::from_value(json!({
            "provider": provider.as_str(),
            "base_url": base_url,
            "model": "embed-fake",
        }))
        .unwrap();
        let on = run(Some(LlmClient::new(cfg, None).unwrap())).await;
        assert!(on.skipped.is_empty(), "{:?}", on.skipped);
        let found: Vec<_> = on
            .candidates
            .iter()
            .filter(|c| c.text.contains("tabby"))
            .collect();
        assert_eq!(found.len(), 1, "{:?}", on.candidates);
        assert_eq!(found[0].source, "vector");
        assert_eq!(on.counts["trigram_events"], 0);
        assert!(on.counts["vector"] >= 1);
    }
    // Each recall embedded its question alone (one text per request).
    let recalls: Vec<_> = app.llm.requests().into_iter().skip(asked).collect();
    let paths: Vec<&str> = recalls.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["/api/embed", "/v1/embeddings"]);
    for r in &recalls {
        assert_eq!(
            ghost_testkit::fake_llm::embed::inputs(&r.body)
                .unwrap()
                .len(),
            1
        );
    }
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM memory_embeddings")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(stored, 2 * 26, "a recall stores no vector");
    app.cleanup().await;
}

/// Collects for `message` with only the database sources (no vector model).
async fn collect_for(
    pool: &sqlx::PgPool,
    message: &str,
) -> ghost_persona::recall::collect::Collected {
    let plan = retrieval_plan(
        message,
        RetrievalLimits {
            max_candidates: 80,
            max_selected: 12,
        },
        Default::default(),
    );
    let scope = Scope {
        persona: "kuro",
        person: ghost_shared::memory::DEFAULT_PERSON,
        session_id: "now",
        history: Default::default(),
        source_timeout: Duration::from_secs(10),
        similarity_threshold: 0.1,
        embedding: None,
    };
    collect(pool, scope, &plan).await
}

#[tokio::test]
async fn the_trigram_sources_find_the_lines_holding_the_messages_rare_words_first() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    // The memories sit under many newer lines that share the message's common words.
    let mut lines = vec![
        "you remember the kirabono we cooked".to_owned(),
        "マスターはピーマンが大好きだ".to_owned(),
    ];
    lines.extend((0..60).map(|i| format!("do you remember the thing and the day {i}")));
    for (i, text) in lines.iter().enumerate() {
        say_in_old_session(store.pool(), i as i64 + 1, text).await;
    }

    let english = collect_for(store.pool(), "Do you remember the kirabono?").await;
    let first = english
        .candidates
        .iter()
        .find(|c| c.source == "trigram_events")
        .expect("a trigram candidate");
    assert!(first.text.contains("kirabono"), "{:?}", english.candidates);
    assert!(
        english.candidates[0].text.contains("kirabono"),
        "ranked first: {:?}",
        english.candidates
    );
    // Only the line holding the rare word is a trigram candidate, not every line sharing
    // "do you remember the".
    assert_eq!(
        english.counts["trigram_events"], 1,
        "{:?}",
        english.candidates
    );

    // Japanese without spaces: the katakana word is the term.
    let japanese = collect_for(store.pool(), "ピーマンの話、覚えてる？").await;
    assert_eq!(
        japanese.counts["trigram_events"], 1,
        "{:?}",
        japanese.candidates
    );
    assert!(
        japanese.candidates[0].text.contains("ピーマン"),
        "{:?}",
        japanese.candidates
    );

    // A message of function words only falls back to sentence similarity.
    let vague = collect_for(store.pool(), "do you remember the thing?").await;
    assert!(vague.counts["trigram_events"] > 1, "{:?}", vague.counts);
    env.cleanup().await;
}

/// `persona_selection_context.long_mood_state` is the mood service's mood, and
/// `recent_vad_average` has one definition: the persona's own momentary affects the write
/// plans stored (`event_affect`), averaged by confidence over the last day
/// (`ghost_shared::autonomy::recent_vad`), not the long mood's label again. The selection
/// and the deliberation read the same value.
#[tokio::test]
async fn the_selection_and_the_deliberation_read_the_persona_s_real_mood() {
    let mut services = ServiceName::ALL.to_vec();
    services.push(ServiceName::WritePlan);
    let app = TestApp::spawn_services(
        &services,
        &[
            ("GHOST_MEMORY__RECALL_ENABLED", "true"),
            ("GHOST_AUTONOMY__INTERVAL_SECS", "0"),
        ],
    )
    .await;
    // Each plan feels something about its utterance: glad of the peppers (sure), a little
    // low about the rain (unsure).
    app.llm.set_responder(|r| {
        let system = r.system_text().unwrap_or_default();
        let said = r.last_user_json()["turn"]["user_text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let script = answer(r);
        let felt = |v: f64, a: f64, d: f64, c: f64| {
            json!({"moment_affect_text": "…", "moment_affect_labels": [],
                   "moment_affect_score_vad": {"v": v, "a": a, "d": d},
                   "moment_affect_confidence": c})
        };
        let affect = match said.as_str() {
            s if s.contains("green peppers") => felt(0.6, 0.2, 0.1, 0.9),
            s if s.contains("raining") => felt(-0.4, 0.4, -0.2, 0.3),
            _ => return script,
        };
        if !system.contains("long-term memory") {
            return script;
        }
        let mut plan: Value = serde_json::from_str(&script.text()).unwrap();
        plan["event_affect"] = affect;
        Script::reply(&plan.to_string())
    });
    app.chat("mood-a", "I like green peppers a lot").await;
    app.chat("mood-a", "It is raining again today").await;
    eventually(Duration::from_secs(30), "both plans applied", || async {
        let n: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM memory_event_annotations WHERE annotation ? 'event_affect' \
             AND jsonb_typeof(annotation -> 'event_affect') = 'object'",
        )
        .fetch_one(app.store.pool())
        .await
        .unwrap();
        (n >= 2).then_some(())
    })
    .await;
    let sad = json!({
        "label": "sadness", "intensity": 0.7,
        "components": {"joy": 0.1, "sadness": 0.7, "anger": 0.0, "fear": 0.2},
        "response_policy": {"cooperation": 0.8, "refusal_bias": 0.0, "refusal_allowed": false}
    });
    let put = app
        .http
        .put(format!("{}/api/partner_mood", app.base_url))
        .bearer_auth(TOKEN)
        .body(sad.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), 200);
    // (0.6·0.9 − 0.4·0.3) / 1.2 and so on: the sure gladness outweighs the unsure gloom,
    // whatever the long mood's label says.
    let expected = [0.35, 0.25, 0.025];
    let is_expected = |vad: &Value| {
        ["v", "a", "d"]
            .iter()
            .zip(expected)
            .all(|(k, want)| vad[*k].as_f64().is_some_and(|x| (x - want).abs() < 1e-6))
    };

    app.chat("mood-b", "ピーマンの話、覚えてる？").await;
    let inputs = |marker: &'static str| {
        app.llm
            .requests()
            .into_iter()
            .filter_map(|r| serde_json::from_str::<Value>(&r.last_user_text()?).ok())
            .filter(move |v| v.get(marker).is_some())
            .collect::<Vec<_>>()
    };
    let selection = inputs("persona_selection_context")
        .pop()
        .expect("a selection request");
    let context = &selection["persona_selection_context"];
    assert_eq!(context["long_mood_state"], sad, "{context}");
    assert!(is_expected(&context["recent_vad_average"]), "{context}");

    app.tick().await;
    let deliberation = eventually(Duration::from_secs(20), "the deliberation", || async {
        inputs("deliberation_input").pop()
    })
    .await;
    let input = &deliberation["deliberation_input"];
    assert_eq!(input["long_mood_state"], sad);
    assert!(is_expected(&input["recent_vad_average"]), "{input}");
    app.cleanup().await;
}
