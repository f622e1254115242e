# Sourced by the bench scripts, after they set `prog` (their name in messages): where the
# repository is, where its siblings (../shared, ../peers) are, and the error exit.

# Ends the script with a message and exit status 2 (a usage or setup error).
die() {
  echo "$prog: $*" >&2
  exit 2
}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# A git worktree lives elsewhere than the main checkout, whose siblings ../shared and
# ../peers are meant: `base` is the main checkout (the one holding the common git directory).
base=$root
if common=$(git -C "$root" rev-parse --path-format=absolute --git-common-dir 2>/dev/null); then
  base=$(dirname "$common")
fi

# The sibling `$1` of the repository (../shared, ../peers), beside the main checkout when it
# is there, else beside this checkout.
sibling() {
  if [ -e "$base/../$1" ]; then
    (cd "$base/../$1" && pwd)
  else
    echo "$root/../$1"
  fi
}
