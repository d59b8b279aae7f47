#!/usr/bin/env bash
# Makes the small git repository the tasks of git_tasks.yaml are about, at the path given
# (which must not exist yet). Fixed names and dates: every run gives the same commits.
#   bash docs/examples/git/make_repo.sh /tmp/demo-repo && export REPO=/tmp/demo-repo
set -euo pipefail
repo="${1:?usage: make_repo.sh PATH}"
[ -e "$repo" ] && { echo "make_repo.sh: $repo exists already" >&2; exit 2; }
mkdir -p "$repo" && cd "$repo"
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_SYSTEM=/dev/null
git init -q -b main .
commit() {  # commit AUTHOR EMAIL DATE MESSAGE
  GIT_AUTHOR_NAME="$1" GIT_AUTHOR_EMAIL="$2" GIT_AUTHOR_DATE="$3" \
  GIT_COMMITTER_NAME="$1" GIT_COMMITTER_EMAIL="$2" GIT_COMMITTER_DATE="$3" git commit -q -m "$4"
}
printf '# Weather demo\n\nPrints the weather.\n' > README.md
git add README.md && commit "Ada Lovelace" ada@example.org "2024-03-01T10:00:00+00:00" "Add README"
printf 'def forecast(city):\n    return f"Sunny in {city}"\n' > weather.py
git add weather.py && commit "Alan Turing" alan@example.org "2024-03-02T11:30:00+00:00" "Add forecast function"
printf '# Weather demo\n\nPrints the weather forecast for a city.\n' > README.md
git add README.md && commit "Ada Lovelace" ada@example.org "2024-03-03T09:15:00+00:00" "Describe the forecast in the README"
printf '1.2.0\n' > VERSION
git add VERSION && commit "Grace Hopper" grace@example.org "2024-03-04T16:45:00+00:00" "Release 1.2.0"
git branch feature-radar HEAD~1
git checkout -q feature-radar
printf 'def radar(city):\n    return f"No rain near {city}"\n' > radar.py
git add radar.py && commit "Alan Turing" alan@example.org "2024-03-05T08:00:00+00:00" "Add radar view"
git checkout -q main
printf 'def forecast(city):\n    return f"Cloudy in {city}"\n' > weather.py   # changed, not staged
