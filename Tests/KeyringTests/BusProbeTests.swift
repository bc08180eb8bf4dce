import Testing
import TestSupport

import Keyring

/// The bus questions `idtool doctor` asks when the Secret Service fails, against the real provider.
@Suite("Bus probes for doctor")
struct BusProbeTests {
    @Test("the provider opens a plain session, and its names are on the bus")
    func probes() throws {
        try requireTestKeyring()
        #expect(BusProbe.opensPlainSession())
        #expect(BusProbe.isAvailable("org.freedesktop.secrets"))
        // KWallet's daemon owns its own name; on the other providers' buses Debian's activation file may offer it.
        if TestProvider.isKWallet { #expect(BusProbe.isAvailable("org.kde.\(TestProvider.kwalletDaemon)")) }
        #expect(!BusProbe.isAvailable("org.example.NoSuchName"))
    }
}
