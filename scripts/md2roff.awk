# The subset of Markdown memgate's manuals (docs/*.md) use, as man(7) text
# for scripts/make-man: paragraphs, "- " lists (a paragraph indented under
# an item stays in it), ``` blocks, indented blocks and tables kept as
# they are, headings as bold lines; links become their text, and backticks
# and ** go. The first line (the links back to the README) and the
# "# title" line are left out: the man page names the section itself.
function inline(s) {
  gsub(/\\/, "\\e", s)
  while (match(s, /\[[^]]*\]\([^)]*\)/)) {
    t = substr(s, RSTART + 1, RLENGTH - 2); sub(/\]\(.*/, "", t)
    s = substr(s, 1, RSTART - 1) t substr(s, RSTART + RLENGTH)
  }
  gsub(/\*\*/, "", s); gsub(/`/, "", s)
  return s
}
function out(s) { if (s ~ /^[.']/) s = "\\&" s; print s }
# A new paragraph before this line, if a blank line came before it.
function paragraph(indented) {
  if (!blank) return
  if (indented && inlist) print ".IP \"\" 2"; else { print ".PP"; inlist = 0 }
  blank = 0
}
NR == 1 && /^\[README\]/ { next }
/^ *```/ {
  if (code) { print ".fi"; code = 0 } else { if (!blank) print ".sp"; paragraph($0 ~ /^ /); print ".nf"; code = 1 }
  next
}
code { s = $0; sub(/^  /, "", s); gsub(/\\/, "\\e", s); out(s); next }
/^\|/ || (/^    / && (blank || ind)) {
  if (!ind) { paragraph(0); print ".nf"; ind = 1 }
  if ($0 !~ /^\|[-|]*$/) out(inline($0 ~ /^\|/ ? $0 : substr($0, 5)))
  next
}
ind { print ".fi"; ind = 0 }
/^# / { next }
/^#+ / { sub(/^#+ /, ""); print ".PP"; print ".B \"" inline($0) "\""; blank = 0; inlist = 0; next }
/^ *$/ { blank = 1; next }
/^- / { print ".IP \\(bu 2"; out(inline(substr($0, 3))); blank = 0; inlist = 1; next }
{ paragraph($0 ~ /^ /); s = $0; sub(/^ +/, "", s); out(inline(s)) }
END { if (code || ind) print ".fi" }
