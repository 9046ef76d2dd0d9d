# Homebrew formula for Pitroom, installed from the release archives. A template: the release
# workflow (.github/workflows/release.yml) fills in @VERSION@, @REPOSITORY@ and the @SHA256_…@
# sums and attaches the filled-in pitroom.rb to the GitHub release, for a tap to take. Not yet
# run through `brew install` or `brew audit` (no Mac, no Homebrew where it was written).
class Pitroom < Formula
  desc "Free pit crew for an expensive coding agent: hands bounded work to a cheap agent CLI"
  homepage "https://github.com/@REPOSITORY@"
  version "@VERSION@"
  license "MIT"

  on_macos do
    on_arm do
      url "https://github.com/@REPOSITORY@/releases/download/v@VERSION@/pitroom-@VERSION@-aarch64-apple-darwin.tar.gz"
      sha256 "@SHA256_AARCH64_APPLE_DARWIN@"
    end
    on_intel do
      url "https://github.com/@REPOSITORY@/releases/download/v@VERSION@/pitroom-@VERSION@-x86_64-apple-darwin.tar.gz"
      sha256 "@SHA256_X86_64_APPLE_DARWIN@"
    end
  end

  on_linux do
    on_arm do
      url "https://github.com/@REPOSITORY@/releases/download/v@VERSION@/pitroom-@VERSION@-aarch64-unknown-linux-gnu.tar.gz"
      sha256 "@SHA256_AARCH64_UNKNOWN_LINUX_GNU@"
    end
    on_intel do
      url "https://github.com/@REPOSITORY@/releases/download/v@VERSION@/pitroom-@VERSION@-x86_64-unknown-linux-gnu.tar.gz"
      sha256 "@SHA256_X86_64_UNKNOWN_LINUX_GNU@"
    end
  end

  depends_on "git"

  def install
    # pitroom-guard must sit beside pitroom: pitroom looks for it next to its own executable.
    bin.install "pitroom", "pitroom-guard"
  end

  test do
    assert_match "pitroom #{version}", shell_output("#{bin}/pitroom --version")
  end
end
