//! Checkpoints from the outside: `faultline run` of `plans/reference-checkpoint.yaml` (a checkpoint every 200 ops,
//! a backup down long enough to fall behind its peers' WALs, power losses, a restart-all after a power loss of the
//! whole cluster) must end valid on the correct node and invalid, by its boot check, with the
//! `checkpoint-without-fsync` mutant. Needs root and /dev/fuse (the fault filesystem).

mod support;

use support::{check, explain, fuse_ready, one_cluster, repo_plan_text, results, run_text};

const PLAN: &str = "reference-checkpoint.yaml";
const ARGS: &str = r#"args: ["--checkpoint-interval-ops", "200"]"#;

fn plan(bug: Option<&str>) -> String {
    let text = repo_plan_text(PLAN);
    assert!(
        text.contains(ARGS),
        "{PLAN} sets the checkpoint interval as this test expects"
    );
    match bug {
        Some(bug) => text.replace(
            ARGS,
            &format!(r#"args: ["--checkpoint-interval-ops", "200", "--bug", "{bug}"]"#),
        ),
        None => text,
    }
}

#[test]
fn given_the_checkpoint_plan_when_run_on_the_correct_node_should_be_valid_and_with_unsynced_checkpoints_invalid_by_boot(
) {
    if !fuse_ready() {
        return;
    }
    let _cluster = one_cluster();
    let correct = run_text(&plan(None), &["--seed", "11", "--time-limit", "10s"]);
    let results_correct = results(&correct.run_dir);
    assert_eq!(
        correct.output.status.code(),
        Some(0),
        "the correct node checkpoints safely\n{}\n{results_correct:#}",
        explain(&correct.output)
    );
    let logs: String = ["n1", "n2", "n3"]
        .iter()
        .map(|node| std::fs::read_to_string(correct.run_dir.join(format!("nodes/{node}/node.log"))).unwrap())
        .collect();
    assert!(logs.contains("checkpoint written"), "the run crossed a checkpoint");

    let mutant = run_text(
        &plan(Some("checkpoint-without-fsync")),
        &["--seed", "11", "--time-limit", "10s"],
    );
    let results_mutant = results(&mutant.run_dir);
    assert_eq!(
        mutant.output.status.code(),
        Some(1),
        "a checkpoint lost at a power loss must be caught\n{}\n{results_mutant:#}",
        explain(&mutant.output)
    );
    let boot = check(&results_mutant, "boot");
    let detail = boot.to_string();
    assert_eq!(boot["verdict"], "invalid", "{results_mutant:#}");
    assert!(
        detail.contains("checkpoint") && detail.contains("refusing to boot"),
        "the boot check names the checkpoint the node refused: {detail}"
    );
}
