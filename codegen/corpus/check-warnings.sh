# Sourced by the corpus scripts that check generated crates together (features, v31).
# report_warnings STDERR: prints how many warnings `cargo check --message-format short` wrote
# into STDERR, and the first ones; returns 1 when there are any. Generated crates compile
# without warnings (a document's deprecated operation is allowed by the crate, not warned of).
report_warnings() {
  local n
  n=$(grep -cE '^([^ ]+\.rs:[0-9]+:[0-9]+: )?warning' "$1" || true)
  echo "warnings: $n"
  if [ "$n" != 0 ]; then
    grep -E '^([^ ]+\.rs:[0-9]+:[0-9]+: )?warning' "$1" | head -5 | sed 's/^/    /'
    return 1
  fi
}
