# Shared shell helpers for OdinLink CI scripts (source me; bash only).
# Nothing here writes to the system's apt configuration: private apt state
# lives under $ODL_CACHE/apt.

: "${ODL_CACHE:=${XDG_CACHE_HOME:-$HOME/.cache}/odinlink}"
export ODL_CACHE

odl_log() { echo "[$(basename "$0")] $*" >&2; }
odl_die() { echo "[$(basename "$0")] error: $*" >&2; exit 1; }

# Print the URI of the machine's main Debian archive (not -security), read from
# the system apt configuration (deb822 *.sources, or classic deb lines).
odl_debian_mirror() {
  local f uri=""
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -r "$f" ] || continue
    uri=$(awk '
      /^[[:space:]]*$/ { if (u != "" && s ~ /(^|[[:space:]])(bookworm|trixie|sid|stable|testing|unstable)([[:space:]]|$)/ && u !~ /security/) { print u; exit } u=""; s=""; next }
      /^URIs:/   { sub(/^URIs:[[:space:]]*/, ""); split($0, a, /[[:space:]]+/); u=a[1] }
      /^Suites:/ { sub(/^Suites:[[:space:]]*/, ""); s=$0 }
      END { if (u != "" && u !~ /security/) print u }' "$f" | head -n1)
    [ -n "$uri" ] && break
  done
  if [ -z "$uri" ]; then
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      [ -r "$f" ] || continue
      uri=$(awk '$1 ~ /^deb(-src)?$/ { i=2; if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ } if ($i !~ /security/) { print $i; exit } }' "$f")
      [ -n "$uri" ] && break
    done
  fi
  [ -n "$uri" ] || odl_die "cannot find a Debian mirror URI in /etc/apt"
  printf '%s\n' "${uri%/}"
}

# Signed-By keyring used for private lists.
odl_keyring() {
  local k=/usr/share/keyrings/debian-archive-keyring.gpg
  [ -r "$k" ] && printf '%s\n' "$k"
}

# odl_apt_private NAME TYPES SUITES
# Creates (once) a private apt state dir $ODL_CACHE/apt/NAME with a sources
# list (TYPES e.g. "deb-src" or "deb", SUITES space separated) pointing at the
# machine's mirror, runs apt-get update on it, and sets the array ODL_APT_OPTS
# to the -o options that make apt-get use it.
odl_apt_private() {
  local name=$1 types=$2 suites=$3
  local d="$ODL_CACHE/apt/$name" mirror key
  mirror=$(odl_debian_mirror)
  key=$(odl_keyring || true)
  mkdir -p "$d/lists/partial" "$d/archives/partial"
  {
    echo "Types: $types"
    echo "URIs: $mirror"
    echo "Suites: $suites"
    echo "Components: main"
    [ -n "$key" ] && echo "Signed-By: $key"
  } > "$d/sources.new"
  ODL_APT_OPTS=(
    -o "Dir::Etc::SourceList=$d/private.sources"
    -o "Dir::Etc::SourceParts=/dev/null"
    -o "Dir::State::Lists=$d/lists"
    -o "Dir::Cache::Archives=$d/archives"
    -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
    -o "APT::Sandbox::User=root"
  )
  # Refresh the index when the list changed or is older than a day.
  if ! cmp -s "$d/sources.new" "$d/private.sources" 2>/dev/null \
     || [ -z "$(find "$d/stamp" -mmin -1440 2>/dev/null)" ]; then
    mv "$d/sources.new" "$d/private.sources"
    odl_log "apt-get update (private list '$name': $types $suites)"
    apt-get "${ODL_APT_OPTS[@]}" -qq update >&2 || odl_die "private apt-get update failed"
    touch "$d/stamp"
  else
    rm -f "$d/sources.new"
  fi
}

# odl_hash FILE...  -> sha256 over names and contents (order given)
odl_hash() {
  local f
  for f in "$@"; do
    printf '%s\0' "${f##*/}"
    cat "$f"
    printf '\0'
  done | sha256sum | cut -c1-16
}
