//! Recall quality (issue 35 item 6), small: `ghost-harness recall-quality`'s core on a short
//! conversation (54 sessions, four people, one a group; facts, corrections, small talk),
//! real Postgres, the real all-MiniLM-L6-v2 served as `/v1/embeddings`. What must hold
//! whatever the figures: no question is offered another person's memory under any
//! configuration; with vectors, every corrected fact's newest form ranks before its old
//! one; vectors find more English paraphrases than trigrams alone. No timing.

use ghost_harness::recall_quality::{embedding, report, run_in};
use ghost_testkit::testing::{embedding_model_dir, TestEnv};

#[tokio::test]
async fn recall_keeps_people_apart_prefers_corrections_and_finds_paraphrases() {
    let url = embedding::serve(embedding_model_dir()).await.unwrap();
    let model = embedding::client(&url, embedding::NAME).unwrap();
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    let result = run_in(&store, &env.config.ghost.memory, &model, 0, 7).await;
    env.cleanup().await;
    let run = result.unwrap();
    let summaries = report::summarize(&run.corpus, &run.outcomes);
    let table = report::table(&summaries);
    println!("{table}{}", run.cosines);
    let [trigram, vectors, focus] = &summaries[..] else {
        panic!("three configurations: {table}");
    };
    for s in &summaries {
        assert_eq!(s.cross_person.hits, 0, "{}: {table}", s.config.name);
        assert_eq!((s.unknown, s.skipped), (0, 0), "{}: {table}", s.config.name);
    }
    for s in [vectors, focus] {
        assert_eq!(
            s.newest_first.hits, s.newest_first.n,
            "{}: {table}",
            s.config.name
        );
    }
    assert!(vectors.en_paraphrase.n > 0, "{table}");
    assert!(
        vectors.en_paraphrase.hits > trigram.en_paraphrase.hits,
        "{table}"
    );
}
