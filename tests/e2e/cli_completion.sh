#!/usr/bin/env bash
# The bash completion script loads in a plain bash, completes subcommands
# and options, and knows every option each subcommand's --help lists.
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
complete_words memgate run -- ba | grep -qx bash || fail "memgate run -- ba<TAB> does not offer commands"

note "every option in --help is completed"
for cmd in run doctor history plan report; do
  offered=$(complete_words memgate "$cmd" -)
  for opt in $("$MEMGATE" "$cmd" --help | sed -n 's/^  \(-[a-zA-Z],\)\{0,1\}\(--[a-z][a-z-]*\).*/\2/p' | sort -u); do
    grep -qx -- "$opt" <<<"$offered" || fail "memgate $cmd: $opt is in --help but not completed"
  done
done
echo "ok"
