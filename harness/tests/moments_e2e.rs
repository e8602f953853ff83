//! An anchored shot on real reference nodes: a fault that comes within 0-50 ms after a node logged a template, on a
//! backup other than that node; recorded so that the run's plan reruns it and its replay fires it after the same
//! template on the same node.

mod support;

use faultline::explore::guide::moments::{run_moments, AFTER_LINE_MS};
use faultline_faults::trigger::{Condition, NodeFilter};
use serde_json::Value;
use support::{explain, history, one_cluster, run_text};

const TEMPLATE: &str = "view change started old_view=N new_view=N new_primary=N";

/// Three reference nodes; the primary killed at 2 s and at 5 s, so the backups log view changes; the shot pauses a
/// backup other than the node that logged the first view change after 1 s.
fn plan(seed: u64) -> String {
    format!(
        "name: anchored-shot\nseed: {seed}\ntime_limit: 9s\nsystem: {{kind: reference, nodes: 3}}\n\
         workload: {{kind: register, concurrency: 4, rate: 50, keys: 3, ops_per_key: 150, op_timeout: 1500ms,\n\
         \x20 mix: {{read: 4, write: 4, cas: 2}}}}\n\
         nemesis:\n  process:\n    script:\n\
         \x20     - {{at: 2s, kind: kill, targets: primary, duration: 1s}}\n\
         \x20     - {{at: 5s, kind: kill, targets: primary, duration: 1s}}\n\
         \x20 triggers:\n\
         \x20   - when: {{template: \"{TEMPLATE}\"}}\n      after: 0ms..50ms\n      max_fires: 1\n      not_before: 1s\n\
         \x20     shot: \"{TEMPLATE} => pause@other-backup\"\n\
         \x20     do: {{kind: pause, targets: other-backup, duration: 400ms}}\n\
         final_phase: {{recovery_timeout: 20s, convergence_timeout: 20s, boot_timeout: 20s, restart_all: true}}\n"
    )
}

#[test]
fn given_an_anchored_shot_when_a_node_logs_its_template_should_fault_another_backup_within_the_window_after_the_line() {
    let _one = one_cluster();
    let run = run_text(&plan(11), &[]);
    assert_eq!(run.output.status.code(), Some(0), "{}", explain(&run.output));
    let events = history(&run.run_dir);
    let fired: Vec<&Value> = events
        .iter()
        .filter(|e| e["f"] == "trigger" && e["value"]["condition"] == "template")
        .collect();
    // The kill of the primary makes every backup start a view change; the shot watches from 1 s on, fires once.
    let applied: Vec<&&Value> = fired.iter().filter(|e| e["value"]["fault_id"].is_u64()).collect();
    assert_eq!(applied.len(), 1, "one firing applied its pause: {fired:#?}");
    let value = &applied[0]["value"];
    let subject = value["subject"].as_str().expect("the node that logged the line");
    let delay = value["delay_ms"].as_u64().unwrap();
    assert!((AFTER_LINE_MS.0..=AFTER_LINE_MS.1).contains(&delay), "{value}");
    let pause = events
        .iter()
        .find(|e| e["f"] == "pause" && e["value"]["fault_id"] == value["fault_id"])
        .expect("the shot's pause");
    assert_ne!(
        pause["node"], subject,
        "another backup than the node that logged it: {pause}"
    );
    assert_eq!(pause["value"]["target"], "other-backup");
    // The line is in the subject's log, before the pause, and the pause came after the drawn delay (the engine reads
    // the log every 5 ms; on a busy machine later, never before).
    let moments = run_moments(&run.run_dir).unwrap();
    assert_eq!(moments.armed, 1);
    assert_eq!(moments.fired.len(), 1);
    let line_to_fault = moments.fired[0]
        .line_to_fault_ms
        .expect("a line of the template in the subject's log before the pause");
    // Log stamps are the node's clock in microseconds, the history's its own: allow a millisecond either side.
    assert!(
        line_to_fault + 1 >= delay,
        "the pause came {line_to_fault} ms after the line, its delay was {delay} ms"
    );
    let results = support::results(&run.run_dir);
    assert_eq!(results["verdict"], "valid", "{results:#}");
    // The run's plan keeps the shot (a rerun fires it again), and its replay fires the pause after the same template
    // on the same node, on the node it hit (a shot's role is never resolved again).
    let stored = std::fs::read_to_string(run.run_dir.join("plan.yaml")).unwrap();
    assert!(stored.contains("template:") && stored.contains("shot:"), "{stored}");
    let (_, recorded) = faultline::explore::replay::load(&run.run_dir).unwrap();
    let shot = recorded
        .faults
        .iter()
        .find(|f| {
            f.anchor
                .as_ref()
                .is_some_and(|a| matches!(a.condition, Condition::Template(_)))
        })
        .expect("the shot's pause, anchored");
    let anchor = shot.anchor.as_ref().unwrap();
    let Condition::Template(template) = &anchor.condition else {
        unreachable!()
    };
    assert_eq!(template.pattern, TEMPLATE);
    assert_eq!(
        template.node,
        NodeFilter::Node(faultline_faults::process::parse_node_name(subject).unwrap())
    );
    let text = shot.to_string();
    assert!(
        text.starts_with(&format!("pause [{}]", pause["node"].as_str().unwrap())),
        "{text}"
    );
}
