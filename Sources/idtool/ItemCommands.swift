import Keyring

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `idtool item get|set|reset|list`: raw access to one `SecretStore` item, and the listing.
///
/// There is no plaintext fallback: without a session bus or a Secret Service these fail with 69.
enum ItemCommands {
    /// Runs an item command and returns the exit status. Other commands return 70.
    static func run(_ command: Command) -> Int32 {
        switch command {
        case .itemGet(let identifier, let group, let account, let key, let timeout, let unlock):
            return get(identifier: identifier, group: group, account: account, key: key, keyring: Keyring(timeout: timeout, unlock: unlock))
        case .itemSet(let identifier, let group, let account, let key, let timeout, let unlock):
            return set(identifier: identifier, group: group, account: account, key: key, keyring: Keyring(timeout: timeout, unlock: unlock))
        case .itemReset(let identifier, let group, let account, let timeout, let unlock):
            return reset(identifier: identifier, group: group, account: account, keyring: Keyring(timeout: timeout, unlock: unlock))
        case .itemList(let identifier, let group, let json, let timeout, let unlock):
            return ItemListing.run(identifier: identifier, group: group, json: json, keyring: Keyring(timeout: timeout, unlock: unlock))
        case .itemWatch(let identifier, let group, let account, let json, let timeout):
            return ItemWatch.run(
                identifier: identifier, group: group, account: account, json: json, keyring: Keyring(timeout: timeout, unlock: .never))
        default:
            Output.error("internal error: not an item command: report this as a bug")
            return ExitCode.software.rawValue
        }
    }

    static func get(identifier: String, group: String?, account: String? = nil, key: SecretStore.Key, keyring: Keyring) -> Int32 {
        do throws(KeyringError) {
            let store = try SecretStore(identifier: identifier, account: account, accessGroup: group, keyring: keyring)
            guard let bytes = try store.data(forKey: key) else {
                let what = key == .valueData ? "no such item" : "no such item, or the item has no \(name(of: key))"
                Output.error("\(what): store one with `idtool item set`, or check the identifier, --group and --account")
                return ExitCode.absent.rawValue
            }
            guard Output.write(bytes) else {
                Output.error("cannot write to stdout: check where the output goes")
                return ExitCode.software.rawValue
            }
            return ExitCode.ok.rawValue
        } catch {
            return Output.fail(error)
        }
    }

    static func set(identifier: String, group: String?, account: String? = nil, key: SecretStore.Key, keyring: Keyring) -> Int32 {
        let store: SecretStore
        do throws(KeyringError) {
            store = try SecretStore(identifier: identifier, account: account, accessGroup: group, keyring: keyring)
        } catch {
            return Output.fail(error)
        }
        let value: Data
        do throws(Output.InputError) {
            value = try Output.readStandardInput(limit: SecretStore.maximumValueSize)
        } catch {
            switch error {
            case .tooLarge(let limit):
                Output.error("the value on stdin is larger than \(limit) bytes: store a smaller value")
            case .unreadable(let code):
                Output.error("cannot read the value from stdin (errno \(code)): pipe or redirect the value into idtool item set")
            }
            return ExitCode.dataError.rawValue
        }
        do throws(KeyringError) {
            try store.setData(value, forKey: key)
            return ExitCode.ok.rawValue
        } catch {
            return Output.fail(error)
        }
    }

    static func reset(identifier: String, group: String?, account: String? = nil, keyring: Keyring) -> Int32 {
        do throws(KeyringError) {
            try SecretStore(identifier: identifier, account: account, accessGroup: group, keyring: keyring).reset()
            return ExitCode.ok.rawValue
        } catch {
            return Output.fail(error)
        }
    }

    /// The KEY spelling used on the command line.
    static func name(of key: SecretStore.Key) -> String {
        key == .valueData ? "value" : key.rawValue
    }
}
