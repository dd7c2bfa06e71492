cat <<'TAP'
TAP version 13
1..3
ok 1 - fine
not ok 2 - adds, numbers
  ---
  message: "want 4, got 5\n::error::injected by a message"
  file: "src/a,b:c%.js"
  line: 12
  ...
not ok 3 - plain
  ---
  message: "it broke \x01\x1b[31m <&> ]]>"
  file: "src/plain.js"
  line: 3
  ...
TAP
exit 1
