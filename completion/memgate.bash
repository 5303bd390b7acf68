# bash completion for memgate. Installed as
# share/bash-completion/completions/memgate; tests/e2e/cli_completion.sh
# checks that it knows every subcommand and option `--help` lists.

_memgate() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
  local commands="run wrap doctor history plan report"
  local i cmd="" dashes=0
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${COMP_WORDS[i]} in
      --) dashes=$i; break ;;
      -*) ;;
      *) [ -z "$cmd" ] && cmd=${COMP_WORDS[i]} ;;
    esac
  done
  # After "memgate run --" or "memgate wrap --": the build command.
  if [ "$dashes" -gt 0 ]; then
    if [ $((dashes + 1)) -eq "$COMP_CWORD" ]; then
      mapfile -t COMPREPLY < <(compgen -c -- "$cur")
    else
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    fi
    return
  fi
  case $prev in
    --history|--prior|--report|--trace|--summary-json|--jobserver-log|--html|--ninja-log|--jobs-csv|--python)
      mapfile -t COMPREPLY < <(compgen -f -- "$cur"); return ;;
    --profiles)
      mapfile -t COMPREPLY < <(compgen -d -- "$cur"); return ;;
    --offload)
      mapfile -t COMPREPLY < <(compgen -W "distcc icecc sccache" -- "$cur"); return ;;
    --admission)
      mapfile -t COMPREPLY < <(compgen -W "longest-first packing" -- "$cur"); return ;;
    --jobserver)
      mapfile -t COMPREPLY < <(compgen -W "auto always off" -- "$cur"); return ;;
    --build|--forget)
      # "last" and the ids of recent builds, from the history the line names.
      local hist=() ids
      for ((i = 1; i < COMP_CWORD; i++)); do
        [ "${COMP_WORDS[i]}" = --history ] && hist=(--history "${COMP_WORDS[i+1]}")
      done
      ids=$("${COMP_WORDS[0]}" history --json --limit 20 "${hist[@]}" 2>/dev/null |
        sed -n 's/^      "id": \([0-9][0-9]*\),\{0,1\}$/\1/p')
      mapfile -t COMPREPLY < <(compgen -W "$([ "$prev" = --build ] && echo last) $ids" -- "$cur"); return ;;
    --memory|--reserve|--capacity|--jobs|-j|--cores|--jobs-range|--limit|--nvcc-threads|--gpu-targets|--orders|--seed|--offload-jobs|--decline-after|--prune-older-than)
      return ;;
  esac
  local opts
  case $cmd in
    "") opts="--help --version"
        if [[ $cur != -* ]]; then mapfile -t COMPREPLY < <(compgen -W "$commands" -- "$cur"); return; fi ;;
    run) opts="--memory --reserve --jobs --history --prior --report --trace --summary-json --record-empty --offload --offload-jobs --decline-after --admission --jobserver --jobserver-fifo --jobserver-log --no-confine --quiet --verbose --help --" ;;
    wrap) opts="--help --" ;;
    doctor) opts="--json --kill-stale --build-env --python --help" ;;
    history)
      if [[ " ${COMP_WORDS[*]} " == *" export "* || " ${COMP_WORDS[*]} " == *" import "* ]]; then
        mapfile -t COMPREPLY < <(compgen -f -- "$cur"); return
      fi
      opts="export import --json --build --history --limit --forget --prune-older-than --clear --help" ;;
    plan) opts="--cores --capacity --reserve --jobs-range --recommend --json --build --ninja-log --history --jobs-csv --profiles --nvcc-threads --gpu-targets --orders --seed --admission --help" ;;
    report) opts="--build --html --trace --history --help" ;;
    *) return ;;
  esac
  mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
}
complete -F _memgate memgate
