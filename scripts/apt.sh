# Sourced by the *-deps.sh scripts: apt_install PACKAGE... installs Debian packages, one install
# at a time. Tests run in parallel and may each find a package missing; apt takes one writer
# and fails the others at once ("Could not get lock"), so every install here waits for the
# others to finish (up to 15 minutes) and for any other apt or dpkg run (DPkg::Lock::Timeout).
apt_install() {
  exec 9>"${TMPDIR:-/tmp}/daqnet-apt.lock"
  flock -w 900 9
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "$@" >/dev/null
  flock -u 9
}
