internal import CLibSecret
internal import KeyringShim

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// kwalletd5 and kwalletd6.
extension Quirks {
    /// KWallet lists locked matches but numbers its paths anew on each start, drops writes to a
    /// locked wallet with success, writes its file on a timer (`KWalletFlush`), may key a
    /// session wrongly (`SessionCheck`), and signals neither `SetSecret` nor every change.
    package static let kwallet = Quirks(
        listsLockedMatches: true, renumbersItems: true, savesValuesLate: false, keepsTypeMapAsJSON: false,
        rejectsFieldReferences: false, signalsSetSecret: false, dropsWritesWhileLocked: true, flushesOnRequest: true,
        mayMismatchSessionKeys: true, survivesPromptDismiss: true, signalsEveryItemChange: false, keepsContentType: true,
        answersReplacingCreate: true, savesBeforeAnswering: true, numbersPathsInCreationOrder: true, keepsItemChanges: true)
}

/// KWallet (kwalletd5) writes its encrypted wallet file on a 5-second timer after a change, and
/// not on SIGTERM: a write followed within seconds by a logout or crash is lost (the item comes
/// back empty or not at all). After a write this asks kwalletd5 to write the file now, through its
/// own interface: open (a handle on the already open wallet), sync, close. Measured: a write
/// takes 8 ms instead of 4 ms with a 200-item wallet; with other providers it costs no call (the
/// provider is known by then). Writes are rare; a token lost to a logout right after it was stored is not.
///
/// Best effort: the write itself already succeeded, so failures here are ignored. It is skipped
/// when the wallet is not open (open would then ask for the password) and when the user turned
/// on "Prompt on Open" (open would then ask whether this application may use the wallet).
enum KWalletFlush {
    private static let kwalletName = "org.kde.kwalletd5"
    private static let kwalletPath = "/modules/kwalletd5"
    private static let kwalletInterface = "org.kde.KWallet"
    /// How the flush shows in KWallet Manager's list of connected applications, briefly.
    private static let kwalletAppID = "KeyringIdentity"

    /// The hook every write that succeeded runs: a flush where the provider needs one, through
    /// `org.kde.kwalletd5` when the provider was recognised by owning that name (kwalletd6 owns it
    /// too; a Flatpak's bus proxy hides it, and then there is nothing to flush through).
    static func run(after call: borrowing ServiceCall) {
        let provider = call.provider()
        guard provider.quirks.flushesOnRequest, provider.ownedName == Self.kwalletName,
            let connection = g_dbus_proxy_get_connection(kr_service_proxy(call.service)), !Self.promptsOnOpen()
        else { return }
        guard let wallet = kwallet(connection, call, "networkWallet", nil, reply: "(s)", kr_variant_tuple_string) else { return }
        defer { g_free(wallet) }
        guard kwallet(connection, call, "isOpen", kr_variant_string_tuple(wallet), reply: "(b)", { kr_variant_tuple_bool($0) != 0 }) == true
        else { return }
        guard
            let handle = kwallet(
                connection, call, "open", kr_kwallet_open_tuple(wallet, Self.kwalletAppID), reply: "(i)", { kr_variant_tuple_i32($0) }),
            handle >= 0
        else { return }
        _ = kwallet(connection, call, "sync", kr_kwallet_handle_tuple(handle, Self.kwalletAppID), reply: "()") { _ in () }
        _ = kwallet(connection, call, "close", kr_kwallet_close_tuple(handle, Self.kwalletAppID), reply: "(i)") { _ in () }
    }

    /// True when kwalletrc asks kwalletd to confirm each application that opens a wallet.
    static func promptsOnOpen() -> Bool { KWalletConfig.bool("Prompt on Open", in: "Wallet") == true }

    private static func kwallet<T>(
        _ connection: OpaquePointer, _ call: borrowing ServiceCall, _ method: String, _ parameters: OpaquePointer?, reply replyType: String,
        _ read: (OpaquePointer) -> T?
    ) -> T? {
        // One call that never starts a service; nil on any error (best effort, see above).
        try? BusCall.call(
            connection, kwalletName, kwalletPath, kwalletInterface, method, parameters, reply: replyType,
            timeout: min(2000, call.remainingMilliseconds), cancellable: call.cancellable, parse: read)
    }
}
