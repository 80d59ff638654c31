# bash completion for funclatency: options, their fixed values, PIDs for -p,
# users for --user, files for the offline commands, and BINARY: / lib:
# prefixes for TARGET. Installed by cmake/Packaging.cmake to
# share/bash-completion/completions/funclatency; tests/e2e/test_man_page.py
# checks it offers every option of `funclatency --help` and of each command.
_funclatency() {
  local cur prev words cword
  _init_completion -n = || return

  case ${words[1]} in
    report)
      case $prev in
        -o | --output) _filedir html ;;
        *)
          if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W '-h --help -o --output' -- "$cur"))
          else
            _filedir
          fi
          ;;
      esac
      return
      ;;
    diff)
      case $prev in
        --fail-if-slower | --alpha) ;;
        *)
          if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W '-h --help --json --fail-if-slower --alpha' -- "$cur"))
          else
            _filedir
          fi
          ;;
      esac
      return
      ;;
  esac

  local options="-h --help --version -p --pid -i --interval -d --duration
    -u --microseconds -m --milliseconds -n --nanoseconds -T --timestamp
    --mode --auto-threshold --exit-probes --json -v --verbose -l --list
    -r --regex --merge --max-functions --wait-for-library --late-functions
    --calibrate --subtract-overhead --cpu-split --self --by --max-series --series-expiry
    -c --cgroup
    --kernel-slots --go-goroutines --slowest --slower-than --follow --follow-hold --config --check-config
    --span --span-capacity
    --prometheus --prometheus-prefix --web-config --otlp --otlp-protocol
    --otlp-histogram --otlp-temporality --otlp-pid-attribute --user"

  # Options that take one of a fixed set of values.
  local -A choices=(
    [--mode]='auto events kernel'
    [--exit-probes]='auto uretprobe ret'
    [--by]='pid comm cgroup retval retval:errno retval:null retval:bool retval:raw retval:go-error arg0 arg1 arg2'
    [--otlp-protocol]='http/protobuf http/json grpc'
    [--otlp-histogram]='explicit exponential'
    [--otlp-temporality]='cumulative delta'
  )
  if [[ -n ${choices[$prev]-} ]]; then
    COMPREPLY=($(compgen -W "${choices[$prev]}" -- "$cur"))
    return
  fi

  case $prev in
    -p | --pid)
      _pids
      return
      ;;
    --user)
      COMPREPLY=($(compgen -u -- "$cur"))
      return
      ;;
    --web-config)
      _filedir
      return
      ;;
    --config)
      _filedir '@(yaml|yml)'
      return
      ;;
    --span)
      # NAME=START -> END: offered as the nginx request's, to edit; POINT is
      # entry, return, ret or argN.
      if [[ -z $cur ]]; then
        COMPREPLY=("'request=/usr/sbin/nginx:ngx_http_create_request:ret -> ngx_http_free_request:arg0'")
      fi
      return
      ;;
    --span-capacity)
      return
      ;;
    -i | --interval | -d | --duration | --auto-threshold | --max-functions | \
      --late-functions | --follow-hold | --prometheus | --prometheus-prefix)
      return
      ;;
  esac

  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$options" -- "$cur"))
    return
  fi
  # The first word may be an offline command; otherwise a TARGET: a binary
  # path (BINARY:FUNCTION) or a library prefix. The function part is the
  # user's to type (funclatency -l lists what a pattern matches).
  if ((cword == 1)); then
    COMPREPLY=($(compgen -W 'report diff' -- "$cur"))
  fi
  if [[ $cur != *:* ]]; then
    _filedir
    COMPREPLY+=($(compgen -W 'c: libc: libstdc++: libssl: :' -- "$cur"))
  fi
}
complete -F _funclatency funclatency
