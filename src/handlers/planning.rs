//! The session's task checklist (`todo_read`, `todo_write`) and plan (`plan_read`,
//! `plan_update`), kept in `.toolcat/todos.json` and `.toolcat/plan.json`.
//!
//! Both are replaced whole on every write: the model sends the complete list, so there is no
//! partial-update protocol to get wrong. Rule: at most one item or step is `in_progress`, which
//! keeps "what am I doing now" unambiguous.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolcat::{Access, Target, ToolContext, ToolError};

use super::{failed, now_rfc3339, state};
use toolcat_tools::workspace::Workspace;

const TODOS_FILE: &str = "todos.json";
const PLAN_FILE: &str = "plan.json";

/// Status of a checklist item or plan step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Not started.
    Pending,
    /// Being worked on now (at most one).
    InProgress,
    /// Done.
    Completed,
}

/// One checklist item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TodoItem {
    /// What to do, as a short imperative sentence.
    pub content: String,
    /// Where the item stands.
    pub status: Status,
}

/// The stored checklist.
#[derive(Debug, Default, Serialize, Deserialize)]
struct TodoFile {
    todos: Vec<TodoItem>,
    updated_at: Option<String>,
}

/// Result of `todo_read` and `todo_write`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TodoOutput {
    /// The checklist, in order.
    pub todos: Vec<TodoItem>,
    /// Items not started.
    pub pending: usize,
    /// Items in progress.
    pub in_progress: usize,
    /// Items done.
    pub completed: usize,
    /// When the checklist was last written, RFC 3339 UTC; absent before the first write.
    pub updated_at: Option<String>,
}

impl TodoOutput {
    fn of(file: TodoFile) -> TodoOutput {
        let count = |s: Status| file.todos.iter().filter(|t| t.status == s).count();
        TodoOutput {
            pending: count(Status::Pending),
            in_progress: count(Status::InProgress),
            completed: count(Status::Completed),
            todos: file.todos,
            updated_at: file.updated_at,
        }
    }
}

/// Arguments of `todo_read`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TodoReadArgs {}

/// Target of `todo_read`: its state file, read.
pub fn todo_read_targets(
    _args: &TodoReadArgs,
    ctx: &ToolContext,
) -> Result<Vec<Target>, ToolError> {
    state::target(ctx, TODOS_FILE, Access::Read)
}

/// Returns the checklist.
#[toolcat::tool(prepare = todo_read_targets)]
pub async fn todo_read(args: TodoReadArgs, ctx: &ToolContext) -> Result<TodoOutput, ToolError> {
    let TodoReadArgs {} = args;
    let ws = Workspace::open(ctx)?;
    Ok(TodoOutput::of(state::read(&ws, TODOS_FILE).await?))
}

/// Arguments of `todo_write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TodoWriteArgs {
    /// The whole new checklist, in order; it replaces the old one.
    pub todos: Vec<TodoItem>,
}

/// Checks the one-in-progress rule and that no text is empty.
fn check_items<'a>(
    items: impl Iterator<Item = (&'a str, Status)>,
    what: &str,
) -> Result<(), ToolError> {
    let mut in_progress = 0;
    for (i, (text, status)) in items.enumerate() {
        if text.trim().is_empty() {
            return Err(failed(format!("{what} {} has no text; describe it", i + 1)));
        }
        if status == Status::InProgress {
            in_progress += 1;
        }
    }
    if in_progress > 1 {
        return Err(failed(format!(
            "{in_progress} {what}s are `in_progress`; keep exactly one in progress and mark the \
             others `pending` or `completed`"
        )));
    }
    Ok(())
}

/// Target of `todo_write`: its state file, written.
pub fn todo_write_targets(
    _args: &TodoWriteArgs,
    ctx: &ToolContext,
) -> Result<Vec<Target>, ToolError> {
    state::target(ctx, TODOS_FILE, Access::Write)
}

/// Replaces the checklist.
#[toolcat::tool(prepare = todo_write_targets)]
pub async fn todo_write(args: TodoWriteArgs, ctx: &ToolContext) -> Result<TodoOutput, ToolError> {
    let ws = Workspace::open(ctx)?;
    check_items(
        args.todos.iter().map(|t| (t.content.as_str(), t.status)),
        "item",
    )?;
    let file = state::update(&ws, TODOS_FILE, |file: &mut TodoFile| {
        file.todos = args.todos;
        file.updated_at = Some(now_rfc3339());
        Ok(TodoFile {
            todos: file.todos.clone(),
            updated_at: file.updated_at.clone(),
        })
    })
    .await?;
    Ok(TodoOutput::of(file))
}

/// One step of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanStep {
    /// What the step does, in a few words.
    pub step: String,
    /// Where the step stands.
    pub status: Status,
}

/// The stored plan; also the result of `plan_read` and `plan_update`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Plan {
    /// Ordered steps; empty before the first `plan_update`.
    pub steps: Vec<PlanStep>,
    /// Note given with the last update: what changed and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    /// When the plan was last written, RFC 3339 UTC.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
}

/// Arguments of `plan_read`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanReadArgs {}

/// Target of `plan_read`: its state file, read.
pub fn plan_read_targets(
    _args: &PlanReadArgs,
    ctx: &ToolContext,
) -> Result<Vec<Target>, ToolError> {
    state::target(ctx, PLAN_FILE, Access::Read)
}

/// Returns the plan.
#[toolcat::tool(prepare = plan_read_targets)]
pub async fn plan_read(args: PlanReadArgs, ctx: &ToolContext) -> Result<Plan, ToolError> {
    let PlanReadArgs {} = args;
    let ws = Workspace::open(ctx)?;
    state::read(&ws, PLAN_FILE).await
}

/// Arguments of `plan_update`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanUpdateArgs {
    /// The whole plan, in order; it replaces the old one.
    #[schemars(length(min = 1))]
    pub steps: Vec<PlanStep>,
    /// What changed since the last update and why.
    #[serde(default)]
    pub explanation: Option<String>,
}

/// Target of `plan_update`: its state file, written.
pub fn plan_update_targets(
    _args: &PlanUpdateArgs,
    ctx: &ToolContext,
) -> Result<Vec<Target>, ToolError> {
    state::target(ctx, PLAN_FILE, Access::Write)
}

/// Replaces the plan.
#[toolcat::tool(prepare = plan_update_targets)]
pub async fn plan_update(args: PlanUpdateArgs, ctx: &ToolContext) -> Result<Plan, ToolError> {
    let ws = Workspace::open(ctx)?;
    if args.steps.is_empty() {
        return Err(failed("`steps` is empty; a plan needs at least one step"));
    }
    check_items(
        args.steps.iter().map(|s| (s.step.as_str(), s.status)),
        "step",
    )?;
    state::update(&ws, PLAN_FILE, |plan: &mut Plan| {
        *plan = Plan {
            steps: args.steps,
            explanation: args.explanation.filter(|e| !e.trim().is_empty()),
            updated_at: Some(now_rfc3339()),
        };
        Ok(plan.clone())
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(content: &str, status: Status) -> TodoItem {
        TodoItem {
            content: content.into(),
            status,
        }
    }

    #[tokio::test]
    async fn todo_write_replaces_and_todo_read_returns_the_list() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ctx = ToolContext::new(dir.path());
        let empty = todo_read(TodoReadArgs::default(), &ctx)
            .await
            .expect("read");
        assert!(empty.todos.is_empty() && empty.updated_at.is_none());

        let todos = vec![
            item("write tests", Status::Completed),
            item("fix parser", Status::InProgress),
            item("update docs", Status::Pending),
        ];
        let written = todo_write(
            TodoWriteArgs {
                todos: todos.clone(),
            },
            &ctx,
        )
        .await
        .expect("write");
        assert_eq!(
            (written.pending, written.in_progress, written.completed),
            (1, 1, 1)
        );
        let read = todo_read(TodoReadArgs::default(), &ctx)
            .await
            .expect("read");
        assert_eq!(read.todos, todos);
        assert!(read.updated_at.is_some());
        assert!(dir.path().join(".toolcat/todos.json").is_file());

        let two = todo_write(
            TodoWriteArgs {
                todos: vec![item("a", Status::InProgress), item("b", Status::InProgress)],
            },
            &ctx,
        )
        .await
        .expect_err("two in progress");
        assert!(
            two.to_string().contains("2 items are `in_progress`"),
            "{two}"
        );
        // A refused write leaves the stored list alone.
        assert_eq!(
            todo_read(TodoReadArgs::default(), &ctx)
                .await
                .expect("read")
                .todos,
            todos
        );
        assert!(todo_write(
            TodoWriteArgs {
                todos: vec![item(" ", Status::Pending)]
            },
            &ctx
        )
        .await
        .is_err());
    }

    #[tokio::test]
    async fn plan_update_replaces_the_plan() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ctx = ToolContext::new(dir.path());
        assert!(plan_read(PlanReadArgs::default(), &ctx)
            .await
            .expect("read")
            .steps
            .is_empty());
        let steps = vec![
            PlanStep {
                step: "reproduce".into(),
                status: Status::Completed,
            },
            PlanStep {
                step: "fix".into(),
                status: Status::InProgress,
            },
        ];
        let plan = plan_update(
            PlanUpdateArgs {
                steps: steps.clone(),
                explanation: Some("found the cause".into()),
            },
            &ctx,
        )
        .await
        .expect("update");
        assert_eq!(plan.steps, steps);
        let read = plan_read(PlanReadArgs::default(), &ctx)
            .await
            .expect("read");
        assert_eq!(read.steps, steps);
        assert_eq!(read.explanation.as_deref(), Some("found the cause"));
        assert!(plan_update(
            PlanUpdateArgs {
                steps: vec![],
                explanation: None
            },
            &ctx
        )
        .await
        .is_err());
    }
}
