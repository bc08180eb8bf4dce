import Keyring

/// `idtool lock` and `idtool unlock`: the default collection's lock state, through
/// `Keyring.lockCollection()` and `unlockCollection()`. They print nothing on success; a failure is one line on
/// stderr with its status: 69 for `lock` on the file backend, 75 when `unlock` leaves it locked.
enum LockCommands {
    /// Runs a lock command and returns the exit status. Other commands return 70.
    static func run(_ command: Command) -> Int32 {
        do throws(KeyringError) {
            switch command {
            case .lock(let timeout): try Keyring(timeout: timeout).lockCollection()
            case .unlock(let timeout, let unlock): try Keyring(timeout: timeout, unlock: unlock).unlockCollection()
            default:
                Output.error("internal error: not a lock command: report this as a bug")
                return ExitCode.software.rawValue
            }
            return ExitCode.ok.rawValue
        } catch {
            return Output.fail(error)
        }
    }
}
