//! Reminders: `schedule_reminder`, `list_reminders`, `cancel_reminder`, kept in
//! `.toolcat/reminders.json`.
//!
//! The tools keep the schedule; delivering a due reminder is the host's job (it polls
//! `list_reminders` with `due_only`, or reads the file). Times are RFC 3339 with an offset; they
//! are stored and shown in UTC.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use toolcat::{Access, Target, ToolContext, ToolError};

use super::{failed, rfc3339, state};
use toolcat_tools::workspace::Workspace;

const REMINDERS_FILE: &str = "reminders.json";
/// Furthest ahead a reminder may be scheduled with `in_minutes`: one year.
pub const MAX_MINUTES: u64 = 366 * 24 * 60;

/// One scheduled reminder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Reminder {
    /// Stable id, `r1`, `r2`, … in order of scheduling.
    pub id: String,
    /// What to remind about.
    pub message: String,
    /// When it is due, RFC 3339 UTC.
    pub due_at: String,
    /// Due time as Unix seconds (for ordering).
    pub due_unix: i64,
    /// When it was scheduled, RFC 3339 UTC.
    pub created_at: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct ReminderFile {
    next_id: u64,
    reminders: Vec<Reminder>,
}

/// Arguments of `schedule_reminder`. Give exactly one of `due_at` and `in_minutes`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleReminderArgs {
    /// What to remind about, written for the moment it is due.
    pub message: String,
    /// Due time in RFC 3339 with an offset, e.g. `2026-05-04T09:00:00+02:00`.
    #[serde(default)]
    pub due_at: Option<String>,
    /// Due this many minutes from now.
    #[serde(default)]
    #[schemars(range(min = 1, max = 527040))]
    pub in_minutes: Option<u64>,
}

/// When a reminder asked for with `due_at` or `in_minutes` is due, relative to `now`.
fn due_time(
    due_at: Option<&str>,
    in_minutes: Option<u64>,
    now: OffsetDateTime,
) -> Result<OffsetDateTime, ToolError> {
    let due = match (due_at, in_minutes) {
        (Some(text), None) => OffsetDateTime::parse(text.trim(), &Rfc3339).map_err(|e| {
            failed(format!(
                "`due_at` `{text}` is not an RFC 3339 time ({e}); write it like \
                 `2026-05-04T09:00:00+02:00`"
            ))
        })?,
        (None, Some(minutes)) if (1..=MAX_MINUTES).contains(&minutes) => {
            now + time::Duration::minutes(i64::try_from(minutes).unwrap_or(i64::MAX))
        }
        (None, Some(_)) => {
            return Err(failed(format!(
                "`in_minutes` must be between 1 and {MAX_MINUTES}"
            )))
        }
        _ => {
            return Err(failed(
                "give exactly one of `due_at` (an RFC 3339 time) and `in_minutes`",
            ))
        }
    };
    if due <= now {
        return Err(failed(format!(
            "`due_at` {} is in the past; pick a time after {}",
            rfc3339(due),
            rfc3339(now)
        )));
    }
    Ok(due)
}

/// Target of `schedule_reminder`: its state file, written.
pub fn schedule_reminder_targets(
    _args: &ScheduleReminderArgs,
    ctx: &ToolContext,
) -> Result<Vec<Target>, ToolError> {
    state::target(ctx, REMINDERS_FILE, Access::Write)
}

/// Schedules a reminder.
#[toolcat::tool(prepare = schedule_reminder_targets)]
pub async fn schedule_reminder(
    args: ScheduleReminderArgs,
    ctx: &ToolContext,
) -> Result<Reminder, ToolError> {
    let ws = Workspace::open(ctx)?;
    let message = args.message.trim().to_string();
    if message.is_empty() {
        return Err(failed("`message` is empty; say what to remind about"));
    }
    let now = OffsetDateTime::now_utc();
    let due = due_time(args.due_at.as_deref(), args.in_minutes, now)?;
    state::update(&ws, REMINDERS_FILE, move |file: &mut ReminderFile| {
        file.next_id += 1;
        let reminder = Reminder {
            id: format!("r{}", file.next_id),
            message,
            due_at: rfc3339(due),
            due_unix: due.unix_timestamp(),
            created_at: rfc3339(now),
        };
        file.reminders.push(reminder.clone());
        Ok(reminder)
    })
    .await
}

/// Arguments of `list_reminders`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListRemindersArgs {
    /// Only reminders whose due time has passed.
    #[serde(default)]
    pub due_only: bool,
}

/// One listed reminder.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ListedReminder {
    /// The reminder.
    #[serde(flatten)]
    pub reminder: Reminder,
    /// Its due time has passed.
    pub due: bool,
}

/// Result of `list_reminders`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ListRemindersOutput {
    /// Reminders, soonest first.
    pub reminders: Vec<ListedReminder>,
    /// The time the list was made, RFC 3339 UTC.
    pub now: String,
}

/// The reminders of `file` as listed at `now`.
fn listing(
    mut reminders: Vec<Reminder>,
    due_only: bool,
    now: OffsetDateTime,
) -> Vec<ListedReminder> {
    reminders.sort_by(|a, b| a.due_unix.cmp(&b.due_unix).then_with(|| a.id.cmp(&b.id)));
    reminders
        .into_iter()
        .map(|reminder| {
            let due = reminder.due_unix <= now.unix_timestamp();
            ListedReminder { reminder, due }
        })
        .filter(|r| !due_only || r.due)
        .collect()
}

/// Target of `list_reminders`: its state file, read.
pub fn list_reminders_targets(
    _args: &ListRemindersArgs,
    ctx: &ToolContext,
) -> Result<Vec<Target>, ToolError> {
    state::target(ctx, REMINDERS_FILE, Access::Read)
}

/// Lists reminders.
#[toolcat::tool(prepare = list_reminders_targets)]
pub async fn list_reminders(
    args: ListRemindersArgs,
    ctx: &ToolContext,
) -> Result<ListRemindersOutput, ToolError> {
    let ws = Workspace::open(ctx)?;
    let file: ReminderFile = state::read(&ws, REMINDERS_FILE).await?;
    let now = OffsetDateTime::now_utc();
    Ok(ListRemindersOutput {
        reminders: listing(file.reminders, args.due_only, now),
        now: rfc3339(now),
    })
}

/// Arguments of `cancel_reminder`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelReminderArgs {
    /// Id of the reminder, as `list_reminders` shows it (`r3`).
    pub id: String,
}

/// Result of `cancel_reminder`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CancelReminderOutput {
    /// The cancelled reminder.
    pub cancelled: Reminder,
}

/// Target of `cancel_reminder`: its state file, written.
pub fn cancel_reminder_targets(
    _args: &CancelReminderArgs,
    ctx: &ToolContext,
) -> Result<Vec<Target>, ToolError> {
    state::target(ctx, REMINDERS_FILE, Access::Write)
}

/// Cancels a reminder.
#[toolcat::tool(prepare = cancel_reminder_targets)]
pub async fn cancel_reminder(
    args: CancelReminderArgs,
    ctx: &ToolContext,
) -> Result<CancelReminderOutput, ToolError> {
    let ws = Workspace::open(ctx)?;
    let id = args.id.trim().to_string();
    state::update(&ws, REMINDERS_FILE, move |file: &mut ReminderFile| {
        let at = file
            .reminders
            .iter()
            .position(|r| r.id == id)
            .ok_or_else(|| {
                failed(format!(
                    "there is no reminder `{id}`; use `list_reminders` to find the right id"
                ))
            })?;
        Ok(CancelReminderOutput {
            cancelled: file.reminders.remove(at),
        })
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> OffsetDateTime {
        OffsetDateTime::parse(text, &Rfc3339).expect("time")
    }

    #[test]
    fn due_time_accepts_offsets_and_relative_minutes() {
        let now = at("2026-05-01T10:00:00Z");
        let due = due_time(Some("2026-05-01T14:30:00+02:00"), None, now).expect("due_at");
        assert_eq!(rfc3339(due), "2026-05-01T12:30:00Z");
        let due = due_time(None, Some(90), now).expect("in_minutes");
        assert_eq!(rfc3339(due), "2026-05-01T11:30:00Z");
        for (due_at, minutes) in [
            (Some("2026-05-01T09:00:00Z"), None),
            (Some("tomorrow"), None),
            (None, Some(0)),
            (None, None),
            (Some("2026-05-02T09:00:00Z"), Some(5)),
        ] {
            assert!(
                due_time(due_at, minutes, now).is_err(),
                "{due_at:?} {minutes:?}"
            );
        }
    }

    #[test]
    fn listing_orders_by_due_time_and_filters_due_ones() {
        let reminder = |id: &str, due: &str| Reminder {
            id: id.into(),
            message: id.into(),
            due_at: due.into(),
            due_unix: at(due).unix_timestamp(),
            created_at: "2026-01-01T00:00:00Z".into(),
        };
        let all = vec![
            reminder("r1", "2026-05-03T00:00:00Z"),
            reminder("r2", "2026-05-01T00:00:00Z"),
        ];
        let now = at("2026-05-02T00:00:00Z");
        let listed = listing(all.clone(), false, now);
        let order: Vec<(&str, bool)> = listed
            .iter()
            .map(|r| (r.reminder.id.as_str(), r.due))
            .collect();
        assert_eq!(order, vec![("r2", true), ("r1", false)]);
        let due = listing(all, true, now);
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].reminder.id, "r2");
    }

    #[tokio::test]
    async fn schedule_list_and_cancel() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ctx = ToolContext::new(dir.path());
        let r = schedule_reminder(
            ScheduleReminderArgs {
                message: "stand-up".into(),
                due_at: None,
                in_minutes: Some(30),
            },
            &ctx,
        )
        .await
        .expect("schedule");
        assert_eq!(r.id, "r1");
        let listed = list_reminders(ListRemindersArgs::default(), &ctx)
            .await
            .expect("list");
        assert_eq!(listed.reminders.len(), 1);
        assert!(!listed.reminders[0].due);
        let due = list_reminders(ListRemindersArgs { due_only: true }, &ctx)
            .await
            .expect("list");
        assert!(due.reminders.is_empty());
        let cancelled = cancel_reminder(CancelReminderArgs { id: "r1".into() }, &ctx)
            .await
            .expect("cancel");
        assert_eq!(cancelled.cancelled.message, "stand-up");
        assert!(
            cancel_reminder(CancelReminderArgs { id: "r1".into() }, &ctx)
                .await
                .is_err()
        );
    }
}
