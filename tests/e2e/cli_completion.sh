#!/usr/bin/env bash
# The bash and zsh completion scripts load in a plain shell (zsh through
# compinit, as installed), complete subcommands and options, and know every
# option each subcommand's --help lists.
source "$(dirname "$0")/lib.sh"
: "${MEMGATE_SRC:?}"
script="$MEMGATE_SRC/completion/memgate.bash"

# complete_words WORD...: what completing the last WORD offers.
complete_words() {
  bash --norc --noprofile -c '
    source "$1"; shift
    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
    _memgate
    printf "%s\n" "${COMPREPLY[@]}"' _ "$script" "$@"
}

note "it loads and registers for memgate"
bash --norc --noprofile -c 'source "$1" && complete -p memgate' _ "$script" | grep -q -- '-F _memgate memgate' ||
  fail "the script does not register _memgate"

note "subcommands and options"
assert_eq "history" "$(complete_words memgate hi)" "memgate hi<TAB>"
assert_eq "$(printf 'plan\n')" "$(complete_words memgate pl)" "memgate pl<TAB>"
assert_eq 6 "$(complete_words memgate '' | wc -l)" "memgate <TAB> offers the 6 subcommands"
assert_eq "--recommend" "$(complete_words memgate plan --reco)" "memgate plan --reco<TAB>"
assert_eq "--memory" "$(complete_words memgate run --mem)" "memgate run --mem<TAB>"
# Through a file: with pipefail, `grep -q` quitting early would SIGPIPE a
# long list of commands and fail the pipeline now and then.
complete_words memgate run -- ba >"$E2E_TMP/ba"
grep -qx bash "$E2E_TMP/ba" || fail "memgate run -- ba<TAB> does not offer commands"

note "--build and --forget complete 'last' and the ids of recorded builds"
db="$E2E_TMP/h.db"
"$MEMGATE" run -q --record-empty --history "$db" -- true
"$MEMGATE" run -q --record-empty --history "$db" -- true
ids=$("$MEMGATE" history --json --history "$db" | python3 -c 'import json,sys; print(" ".join(str(b["id"]) for b in json.load(sys.stdin)["builds"]))')
[ -n "$ids" ] || fail "no builds recorded"
got=$(PATH="$(dirname "$MEMGATE"):$PATH" complete_words memgate plan --history "$db" --build '' | sort | tr '\n' ' ')
want=$(printf '%s\n' last $ids | sort | tr '\n' ' ')
assert_eq "$want" "$got" "memgate plan --history DB --build <TAB>"
got=$(PATH="$(dirname "$MEMGATE"):$PATH" complete_words memgate history --history "$db" --forget '' | sort | tr '\n' ' ')
assert_eq "$(printf '%s\n' $ids | sort | tr '\n' ' ')" "$got" "memgate history --forget <TAB>"

note "every option in --help is completed"
for cmd in run doctor history plan report; do
  offered=$(complete_words memgate "$cmd" -)
  for opt in $("$MEMGATE" "$cmd" --help | sed -n 's/^  \(-[a-zA-Z],\)\{0,1\}\(--[a-z][a-z-]*\).*/\2/p' | sort -u); do
    grep -qx -- "$opt" <<<"$offered" || fail "memgate $cmd: $opt is in --help but not completed"
  done
done

note "zsh: compinit finds the script and it loads"
command -v zsh >/dev/null || fail "no zsh (apt-get install -y zsh): the zsh completion cannot be checked"
zdir="$E2E_TMP/zsh-functions"
mkdir -p "$zdir"
cp "$MEMGATE_SRC/completion/_memgate" "$zdir/"
zsh -n "$zdir/_memgate" || fail "the zsh completion has a syntax error"
# -f: no user startup files; compinit -u -D: no ownership check, no dump file.
got=$(HOME="$E2E_TMP" zsh -f -c '
  fpath=("$1" $fpath)
  autoload -U compinit && compinit -u -D
  print -r -- "${_comps[memgate]}"
  autoload -U +X _memgate && print -r -- "$(whence -w _memgate)"' _ "$zdir" 2>&1)
assert_eq "$(printf '_memgate\n_memgate: function')" "$got" "compinit registers _memgate for memgate and autoloads it"

# zsh_specs WORD...: the specs _memgate gives _arguments and _describe for
# the command line WORD... (the last one being completed), one per line,
# with both stubbed out: completion widgets only run inside a live zle.
zsh_specs() {
  zsh -f -c '
    _arguments() { print -rl -- "$@"; }
    _describe() { local name=${@[-1]}; print -rl -- "${(@P)name}"; }
    script=$1; shift
    words=("$@"); CURRENT=$#
    source "$script"' _ "$zdir/_memgate" "$@"
}
# The option names of specs: "(-j --jobs)--jobs[CPU slots]:N" is --jobs.
spec_options() { sed -n -e 's/^([^)]*)//' -e 's/[:[].*//' -e '/^-/p' | sort -u; }

note "zsh: subcommands and options"
assert_eq 6 "$(zsh_specs memgate '' | grep -c '^[a-z]*:')" "memgate <TAB> in zsh offers the 6 subcommands"
for cmd in run doctor history plan report; do
  offered=$(zsh_specs memgate "$cmd" - | spec_options)
  [ -n "$offered" ] || fail "zsh: memgate $cmd offers no options"
  for opt in $("$MEMGATE" "$cmd" --help | sed -n 's/^  \(-[a-zA-Z],\)\{0,1\}\(--[a-z][a-z-]*\).*/\2/p' | sort -u); do
    grep -qx -- "$opt" <<<"$offered" || fail "zsh: memgate $cmd: $opt is in --help but not completed"
  done
done

note "zsh: --build and --forget complete 'last' and the ids of recorded builds"
# zsh_builds WORD...: what _memgate_builds offers on the command line
# WORD..., with compadd and _call_program stubbed as zsh_specs does.
zsh_builds() {
  PATH="$(dirname "$MEMGATE"):$PATH" zsh -f -c '
    _arguments() { :; }
    _call_program() { shift; eval "$@"; }
    compadd() { [[ $1 == - ]] && shift; print -rl -- "$@"; }
    script=$1 extra=$2; shift 2
    words=(memgate); CURRENT=1
    source "$script"
    words=("$@"); memgate_bin=memgate
    _memgate_builds ${=extra}' _ "$zdir/_memgate" "$@"
}
got=$(zsh_builds last memgate plan --history "$db" --build '' | sort | tr '\n' ' ')
assert_eq "$want" "$got" "zsh: memgate plan --history DB --build <TAB>"
got=$(zsh_builds '' memgate history --history "$db" --forget '' | sort | tr '\n' ' ')
assert_eq "$(printf '%s\n' $ids | sort | tr '\n' ' ')" "$got" "zsh: memgate history --forget <TAB>"
echo "ok"
