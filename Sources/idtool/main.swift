import Keyring
