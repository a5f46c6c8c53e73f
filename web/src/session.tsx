// Who is signed in, and in which workspace they act.
import { createContext, useCallback, useContext, useEffect, useState } from 'react'
import { ApiError, activeWorkspace, get, post, setActiveWorkspace, type Profile, type Workspace } from './api'

type Session = {
  me: Profile | null
  loading: boolean
  workspaces: Workspace[]
  workspace: Workspace | null
  chooseWorkspace: (id: string) => void
  refresh: () => Promise<void>
  signOut: () => Promise<void>
}

const Ctx = createContext<Session | null>(null)

export function SessionProvider({ children }: { children: React.ReactNode }) {
  const [me, setMe] = useState<Profile | null>(null)
  const [loading, setLoading] = useState(true)
  const [workspaces, setWorkspaces] = useState<Workspace[]>([])
  const [wsID, setWsID] = useState(activeWorkspace())

  const refresh = useCallback(async () => {
    try {
      const p = await get<Profile>('/api/me')
      setMe(p)
      if (p.approved) {
        const list = await get<Workspace[]>('/api/workspaces')
        setWorkspaces(list ?? [])
        if (wsID && !(list ?? []).some((w) => w.id === wsID)) {
          setActiveWorkspace('')
          setWsID('')
        }
      }
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 401)) throw e
      setMe(null)
    } finally {
      setLoading(false)
    }
  }, [wsID])

  useEffect(() => {
    refresh().catch(() => setLoading(false))
  }, [refresh])

  const chooseWorkspace = (id: string) => {
    setActiveWorkspace(id)
    setWsID(id)
  }
  const signOut = async () => {
    await post('/api/auth/logout').catch(() => undefined)
    setMe(null)
    setWorkspaces([])
  }
  const workspace = workspaces.find((w) => w.id === wsID) ?? workspaces.find((w) => w.is_default) ?? workspaces[0] ?? null
  return <Ctx.Provider value={{ me, loading, workspaces, workspace, chooseWorkspace, refresh, signOut }}>{children}</Ctx.Provider>
}

export function useSession(): Session {
  const s = useContext(Ctx)
  if (!s) throw new Error('useSession outside SessionProvider')
  return s
}
