internal import CLibSecret

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

    /// The Secret Service's bus name: `SECRET_SERVICE_BUS_NAME` when it is set to a bus name, as
    /// libsecret reads it, so the library's own calls reach the daemon libsecret's calls reach;
    /// otherwise org.freedesktop.secrets. Read once, as libsecret's default service is made once.
    static let serviceName: String = configuredServiceName.flatMap { g_dbus_is_name($0) != 0 ? $0 : nil } ?? defaultServiceName

    static let defaultServiceName = "org.freedesktop.secrets"

    /// `SECRET_SERVICE_BUS_NAME` as the process started with it (unset or empty: nil).
    private static let configuredServiceName: String? = getenv("SECRET_SERVICE_BUS_NAME").flatMap {
        $0.pointee != 0 ? String(cString: $0) : nil
    }

    /// Why no call is made when `SECRET_SERVICE_BUS_NAME` is set to something that is no bus name
    /// (libsecret would pass it on, and GDBus reject it with a critical). Decided once, with the name.
    static func serviceNameProblem() -> KeyringError? { invalidServiceName }

    private static let invalidServiceName: KeyringError? = configuredServiceName.flatMap { name in
        g_dbus_is_name(name) != 0 ? nil : .invalidArgument("SECRET_SERVICE_BUS_NAME is set to \"\(name)\", which is not a D-Bus bus name")
    }
}
