#!/bin/sh
# pilot-trim-deb PACKAGE 'DEPENDENCY...' ['FILE...']
#
# Downloads PACKAGE (the version apt would install), removes the named
# dependencies from its Depends and the named files (shell patterns relative
# to the root, e.g. 'usr/lib/*/imlib2/loaders/heif.so') from its contents,
# and writes the result to /tmp/trimmed/PACKAGE.deb as version VERSION+pilot1,
# with a note in its description of what was taken out. Install it with
# apt-get install /tmp/trimmed/PACKAGE.deb.
#
# This is how the image leaves out what a package drags in for features the
# desktop never uses (imlib2's HEIF, SVG and PostScript loaders, websockify's
# numpy), while dpkg's database still says exactly what is installed: a later
# layer that needs what was dropped gets it from apt as usual. A package
# another one depends on at an exact version cannot be trimmed this way (the
# new version no longer matches).
#
# Fails, and builds nothing, if a named dependency or file is not there: a
# new Debian release of the package must be looked at again, not half-trimmed.
set -eu

if [ "$#" -lt 2 ] || [ "$#" -gt 3 ]; then
  echo "usage: pilot-trim-deb PACKAGE 'DEPENDENCY...' ['FILE...']" >&2
  exit 2
fi
package=$1
drop_deps=$2
drop_files=${3:-}
out=/tmp/trimmed

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
apt-get download -q "$package" >/dev/null
dpkg-deb -R "$package"_*.deb root

# Globs expand against the package's root; one that matches nothing stays
# as written and fails the rm.
cd root
for pattern in $drop_files; do
  for file in $pattern; do
    rm -- "$file" || {
      echo "pilot-trim-deb: $package has no $pattern" >&2
      exit 1
    }
  done
done
find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0r md5sum >DEBIAN/md5sums
cd ..

awk -v drop=" $drop_deps " -v files="$drop_files" '
  # Depends is one line in a binary package: "a (>= 1), b | c, d".
  /^Depends:/ {
    n = split(substr($0, 9), items, ",")
    kept = ""
    for (i = 1; i <= n; i++) {
      item = items[i]
      sub(/^ +/, "", item)
      name = item
      sub(/[ :(].*/, "", name)
      if (index(drop, " " name " ")) { found[name] = 1; continue }
      kept = kept (kept == "" ? "" : ", ") item
    }
    if (kept != "") print "Depends: " kept
    next
  }
  /^Version:/ { print $0 "+pilot1"; next }
  # The long description is the continuation lines after Description.
  in_desc && !/^ / { note(); in_desc = 0 }
  /^Description:/ { in_desc = 1 }
  { print }
  END {
    if (in_desc) note()
    split(drop, wanted, " ")
    for (i in wanted) {
      if (!(wanted[i] in found)) {
        print "pilot-trim-deb: no dependency on " wanted[i] > "/dev/stderr"
        bad = 1
      }
    }
    exit bad
  }
  function note() {
    print " ."
    print " Rebuilt for pilot-sandbox without the dependencies:" drop
    if (files != "") print " and without the files: " files
  }
' root/DEBIAN/control >control
mv control root/DEBIAN/control

mkdir -p "$out"
dpkg-deb --root-owner-group -Zgzip -z1 -b root "$out/$package.deb" >/dev/null
