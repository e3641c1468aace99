#!/usr/bin/env bash
# Rebuilds ui/assets/vendor/xterm.{js,css} from Debian's node-xterm and
# libjs-xterm packages (xterm.js, MIT): the terminal of the UI's exec panel.
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download node-xterm libjs-xterm >/dev/null)
for deb in "$tmp"/*.deb; do dpkg -x "$deb" "$tmp/root"; done
mkdir -p ui/assets/vendor
node scripts/ui/bundle-xterm.mjs "$tmp/root/usr/share/nodejs/xterm" ui/assets/vendor/xterm.js
# The stylesheet without its comments (they name other hosts; the UI's
# assets must not), with the attribution kept in ui/vendor/.
{
  echo "/* xterm.js 3.8.1 (MIT): see ui/vendor/xterm.LICENSE. Do not edit: scripts/ui/vendor-xterm.sh. */"
  perl -0pe 's{/\*.*?\*/}{}gs' "$tmp/root/usr/share/javascript/xterm/xterm.css"
} > ui/assets/vendor/xterm.css
mkdir -p ui/vendor
cp "$tmp/root/usr/share/doc/node-xterm/copyright" ui/vendor/xterm.LICENSE
