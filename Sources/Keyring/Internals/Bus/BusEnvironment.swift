#if canImport(Glibc)
import Glibc
#endif

/// Checks, without touching the bus, whether GLib could find a session bus at all.
/// Without this GLib would try to autolaunch one through X11.
enum BusEnvironment {
    static func problem() -> KeyringError? {
        if let address = getenv("DBUS_SESSION_BUS_ADDRESS"), address.pointee != 0 { return nil }
        if let runtime = getenv("XDG_RUNTIME_DIR"), runtime.pointee != 0 {
            let socket = String(cString: runtime) + "/bus"
            var info = stat()
            if stat(socket, &info) == 0, (info.st_mode & S_IFMT) == S_IFSOCK { return nil }
        }
        return .noSessionBus(detail: "DBUS_SESSION_BUS_ADDRESS is not set and $XDG_RUNTIME_DIR/bus does not exist")
    }
}
