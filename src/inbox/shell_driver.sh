# shell_driver.sh: a bash or POSIX sh (dash) session's persistent shell, run as the policy's shell
# runs a script (scheduler/driver/repl_driver.h has the wire). Each execute's code is eval'd at the
# top level of this one shell, so variables, functions, the working directory and exported
# variables stay for the next. Its stdin is /dev/null or the request's data, never the wire.
# Wire (stdin): the marker line; then per execute "<code bytes> <code lines> <stdin bytes> <stdin
# lines>\n", the code plus "\n", and (stdin bytes > 0) the stdin data plus "\n". bash reads by byte
# count (read -N, LC_ALL=C), sh by line count (dash has no read -N). Answer: "\x1e<marker>:<status>\n"
# on stdout, "\x1e<marker>\n" on stderr. Names starting with __lsb_ are the driver's.
__lsb_nl='
'
IFS= command read -r __lsb_marker || exit 0
if [ -n "${BASH_VERSION-}" ]; then
  # $1 bytes (the last one the "\n" the host added) into __lsb_got.
  __lsb_take() {
    __lsb_got=
    [ "$1" -gt 0 ] || return 0
    LC_ALL=C IFS= command read -r -N "$1" __lsb_got || return 1
    __lsb_got=${__lsb_got%"$__lsb_nl"}
  }
else
  # $2 lines into __lsb_got, joined by newlines. Up to 64 lines are joined first: the long string
  # grows once per chunk, not once per line (appending to one string is quadratic).
  __lsb_take() {
    __lsb_got= __lsb_chunk= __lsb_n=$2 __lsb_k=0
    while [ "$__lsb_n" -gt 0 ]; do
      IFS= command read -r __lsb_line || return 1
      __lsb_chunk="$__lsb_chunk$__lsb_line$__lsb_nl"
      __lsb_n=$((__lsb_n - 1)) __lsb_k=$((__lsb_k + 1))
      if [ "$__lsb_k" -ge 64 ]; then
        __lsb_got="$__lsb_got$__lsb_chunk" __lsb_chunk= __lsb_k=0
      fi
    done
    __lsb_got="$__lsb_got$__lsb_chunk"
    __lsb_got=${__lsb_got%"$__lsb_nl"}
  }
fi
# One execute's code and stdin into __lsb_code and __lsb_in; false at the end of the wire.
__lsb_next() {
  IFS=' ' command read -r __lsb_cb __lsb_cl __lsb_ib __lsb_il || return 1
  __lsb_take "$__lsb_cb" "$__lsb_cl" || return 1
  __lsb_code=$__lsb_got
  __lsb_take "$__lsb_ib" "$__lsb_il" || return 1
  # The here-document below ends the data with a newline: one it had already is not doubled.
  __lsb_in=${__lsb_got%"$__lsb_nl"}
}
__lsb_answer() {
  __lsb_busy=
  command printf '\036%s:%s\n' "$__lsb_marker" "$1"
  command printf '\036%s\n' "$__lsb_marker" >&2
}
__lsb_busy=
# Two loops so that a `break` or `continue` in the code still answers its execute (status 0).
while :; do
  while :; do
    [ -z "$__lsb_busy" ] || __lsb_answer 0
    __lsb_next || exit 0
    __lsb_busy=1
    # `command eval`: a syntax error in the code fails the eval, it does not end sh.
    if [ "$__lsb_ib" -gt 0 ]; then
      command eval "$__lsb_code" <<__LSB_STDIN__
$__lsb_in
__LSB_STDIN__
    else
      command eval "$__lsb_code" </dev/null
    fi
    __lsb_answer "$?"
  done
  [ -z "$__lsb_busy" ] || __lsb_answer 0
done
