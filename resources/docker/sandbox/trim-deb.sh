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
# layer that needs a dependency that was dropped gets it from apt as usual,
# and one that wants the whole package back installs Debian's version by
# name (apt-get install PACKAGE=VERSION). A package another one depends on
# at an exact version cannot be trimmed this way (the new version no longer
# matches).
#
# A named dependency or file the package does not have is reported on stderr
# and otherwise ignored: the image must still build from another Debian
# release (PILOT_BASE_IMAGE), where names differ, only larger.
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
# as written, and is not there.
cd root
removed=
for pattern in $drop_files; do
  for file in $pattern; do
    if [ -e "$file" ]; then
      rm -- "$file"
      removed="$removed /$file"
    else
      echo "pilot-trim-deb: warning: $package has no $pattern" >&2
    fi
  done
done
find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0r md5sum >DEBIAN/md5sums
cd ..

# Two passes over the control file: the first finds the dependencies to
# drop, the second writes the file without them, noting in the description
# what was dropped.
awk -v package="$package" -v drop=" $drop_deps " -v files="$removed" '
  # Depends is one line in a binary package: "a (>= 1), b | c, d".
  /^Depends:/ {
    n = split(substr($0, 9), items, ",")
    kept = ""
    for (i = 1; i <= n; i++) {
      item = items[i]
      sub(/^ +/, "", item)
      name = item
      sub(/[ :(].*/, "", name)
      if (!index(drop, " " name " ")) {
        kept = kept (kept == "" ? "" : ", ") item
      } else if (NR == FNR) {
        found[name] = 1
        deps = deps " " name
      }
    }
    if (NR != FNR && kept != "") print "Depends: " kept
    next
  }
  NR == FNR { next }
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
        print "pilot-trim-deb: warning: " package " does not depend on " wanted[i] > "/dev/stderr"
      }
    }
  }
  function note() {
    print " ."
    print " Rebuilt for pilot-sandbox without the dependencies" (deps == "" ? " (none)" : ":" deps)
    if (files != "") print " and without the files:" files
  }
' root/DEBIAN/control root/DEBIAN/control >control
mv control root/DEBIAN/control

mkdir -p "$out"
dpkg-deb --root-owner-group -Zgzip -z1 -b root "$out/$package.deb" >/dev/null
