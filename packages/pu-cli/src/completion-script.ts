import type { Completion } from "./completion-candidates.js";

/**
 * The shell side of `pu completion`: a small function that hands the words typed so far to
 * `pu completion --candidates -- WORDS...` and shows what comes back. Every rule about
 * commands, options and ids lives in the CLI (from clipanion's definitions), so the script
 * never goes stale when pu gains a command, and bash and zsh complete alike.
 *
 * The reply (see `formatCompletion`): a first line `words`, `files` or `dirs`; for `words`,
 * then one `value<TAB>description` line per candidate.
 */
export const SHELLS = ["bash", "zsh"] as const;
export type Shell = (typeof SHELLS)[number];

export function formatCompletion(completion: Completion): string {
  if (completion.kind !== "words") return `${completion.kind}\n`;
  // A tab or newline inside a value or description would break the line format.
  const clean = (text: string) => text.replace(/[\t\n\r]+/g, " ");
  return ["words", ...completion.candidates.map((c) => `${clean(c.value)}\t${clean(c.description)}`)].join("\n") + "\n";
}

export function completionScript(shell: Shell): string {
  return shell === "bash" ? BASH : ZSH;
}

// The program is the word the person typed (`pu`, `./bin/pu`, `~/bin/pu`), so a completion
// always asks the pu it is completing for. `pu completion --candidates` never starts a daemon.
const BASH = `# pu shell completion for bash.
# Load it now:      source <(pu completion bash)
# Or for good:      pu completion bash > ~/.local/share/bash-completion/completions/pu
_pu_completion() {
  local program=\${COMP_WORDS[0]}
  [[ $program == "~/"* ]] && program=$HOME/\${program#"~/"}
  local reply
  reply=$(command "$program" completion --candidates -- "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null) || return 0
  local kind=\${reply%%$'\\n'*}
  local current=\${COMP_WORDS[COMP_CWORD]}
  COMPREPLY=()
  case $kind in
    files)
      compopt -o filenames 2>/dev/null
      mapfile -t COMPREPLY < <(compgen -f -- "$current")
      ;;
    dirs)
      compopt -o filenames 2>/dev/null
      mapfile -t COMPREPLY < <(compgen -d -- "$current")
      ;;
    words)
      local line
      while IFS= read -r line; do
        [[ -n $line ]] && COMPREPLY+=("\${line%%$'\\t'*}")
      done < <(printf '%s\\n' "$reply" | tail -n +2)
      ;;
  esac
  return 0
}
complete -F _pu_completion pu
`;

const ZSH = `#compdef pu
# pu shell completion for zsh.
# Load it now:      source <(pu completion zsh)        (after compinit)
# Or for good:      pu completion zsh > "\${fpath[1]}/_pu"   (any directory on $fpath)
_pu() {
  local program=\${words[1]}
  [[ $program == "~/"* ]] && program=$HOME/\${program#"~/"}
  local reply
  reply=$(command "$program" completion --candidates -- "\${(@)words[2,CURRENT]}" 2>/dev/null) || return 1
  local -a lines described
  lines=("\${(@f)reply}")
  case \${lines[1]} in
    files) _files ;;
    dirs) _files -/ ;;
    words)
      local line value description
      for line in "\${(@)lines[2,-1]}"; do
        [[ -z $line ]] && continue
        value=\${line%%$'\\t'*}
        description=\${line#*$'\\t'}
        described+=("\${value//:/\\\\:}:$description")
      done
      (( \${#described} )) && _describe -t pu-values pu described
      ;;
    *) return 1 ;;
  esac
}
if [[ \${funcstack[1]} == _pu ]]; then
  _pu "$@"
else
  compdef _pu pu
fi
`;
