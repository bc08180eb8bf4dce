import Keyring
import DeviceIdentity
