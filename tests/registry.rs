//! One registry: each service crate describes itself once (`DESCRIPTOR`: name, metrics port,
//! projections, start), and the stack and `ghost projections` read the descriptors. A
//! projection a service runs is one its descriptor names, so a rebuild always finds it.

mod support;

use ghost::stack::{projection_by_name, projection_names, ServiceName};
use support::TestApp;

#[tokio::test]
async fn every_projection_a_service_runs_is_one_its_descriptor_names() {
    let mut services = ServiceName::ALL.to_vec();
    services.push(ServiceName::WritePlan);
    let app = TestApp::spawn_services(&services, &[]).await;
    let config = &app.env.config;
    let mut ran = 0;
    for handle in &app.stack.services {
        let name = services
            .iter()
            .find(|s| s.as_str() == handle.service)
            .unwrap_or_else(|| panic!("{} is not a service", handle.service));
        let mut running = handle.projections.clone();
        let mut described = name.descriptor().projection_names(config);
        running.sort_unstable();
        described.sort_unstable();
        assert_eq!(running, described, "{}", handle.service);
        for projection in &running {
            assert!(
                projection_by_name(projection, config).is_some(),
                "ghost projections rebuild {projection}"
            );
        }
        ran += running.len();
    }
    assert_eq!(
        ran,
        projection_names(config).len(),
        "every projection runs somewhere"
    );
    app.cleanup().await;
}

#[test]
fn names_and_projection_names_are_unique() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config");
    let config = ghost_shared::config::Config::load(&dir, std::iter::empty()).expect("config");
    let mut names: Vec<&str> = ServiceName::EVERY.iter().map(|s| s.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), ServiceName::EVERY.len());
    let mut projections = projection_names(&config);
    let all = projections.len();
    projections.sort_unstable();
    projections.dedup();
    assert_eq!(projections.len(), all, "{projections:?}");
    // memory_embeddings is there when an embedding model is (deploy/model.sh fetches it).
    let expected = match config.ghost.llm.contains_key("embedding") {
        true => vec![
            "assistant_text",
            "memory",
            "memory_embeddings",
            "partner_mood_state",
            "reminders",
            "routing",
        ],
        false => vec![
            "assistant_text",
            "memory",
            "partner_mood_state",
            "reminders",
            "routing",
        ],
    };
    assert_eq!(projections, expected);
}
