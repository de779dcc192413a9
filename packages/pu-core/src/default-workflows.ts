// The workflow collection pu ships ("default"): one workflow per ticket type. A project's own
// `.pu/workflows/<TYPE>.yaml` (or `$PU_HOME/workflows/<TYPE>.yaml`) replaces one of these.
// Documented in docs/queue.md.

export const DEFAULT_COLLECTION = "default";

const HEADER = `Ticket {{TICKET_ID}}: {{TITLE}}

{{DESCRIPTION}}
`;

const ANSWER = "When you are done, write a short summary of what you did to {{OUTPUT_FILE}}.";

export const DEFAULT_WORKFLOWS: Readonly<Record<string, string>> = {
  FEAT: `description: A feature - plan it, have the plan reviewed, build it, test it.
steps:
  - name: plan
    prompt: |
      ${indent(HEADER)}

      Read the code this touches and write a short implementation plan (files, steps, risks)
      to PLAN.md in this worktree. Do not change code yet.
    artifact: PLAN.md
    review: plan
  - name: implement
    prompt: |
      Implement {{TICKET_ID}} following PLAN.md. Keep the change focused; commit when it builds.
  - name: test
    prompt: |
      Add or update tests for {{TICKET_ID}}, run the test suite, and fix what fails.
      ${ANSWER}
`,
  FIX: `description: A bug fix - reproduce, fix, prove it with a test.
steps:
  - name: reproduce
    prompt: |
      ${indent(HEADER)}

      Reproduce this bug. Write a failing test that shows it if you can; explain the cause.
  - name: fix
    prompt: |
      Fix the cause of {{TICKET_ID}}, make the new test pass, run the suite and commit.
      ${ANSWER}
`,
  TASK: `description: A chore - do it and summarize.
steps:
  - name: do
    prompt: |
      ${indent(HEADER)}

      Do this task in this worktree and commit the result.
      ${ANSWER}
`,
  SPIKE: `description: An investigation - explore and report, no production change.
steps:
  - name: explore
    prompt: |
      ${indent(HEADER)}

      Investigate this question. Try things in this worktree if that helps, but the answer is
      a report: write your findings, options and a recommendation to {{OUTPUT_FILE}}.
`,
};

function indent(text: string): string {
  return text.trimEnd().split("\n").join("\n      ");
}
